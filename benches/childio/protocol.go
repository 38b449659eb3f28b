// Package childio is what the Go children of informer-bench (benches/client-go,
// benches/controller-runtime) share: the protocol with the orchestrator (ChildMsg and Command in
// benches/src/protocol.rs: one JSON message per line on stdout, one command per line on stdin,
// exit when stdin closes) and the figures every child reports about itself (heap, RSS, CPU).
package childio

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// PhaseTimeout bounds any one phase, as PHASE_TIMEOUT_S does for the Rust children: a stuck
// child fails instead of hanging the run.
const PhaseTimeout = 900 * time.Second

// Metrics are the figures one child reports, by name (Metrics in protocol.rs).
type Metrics map[string]float64

// Extend copies every entry of other into m, replacing what m had.
func (m Metrics) Extend(other Metrics) {
	for k, v := range other {
		m[k] = v
	}
}

// Clone returns a copy of m.
func (m Metrics) Clone() Metrics {
	c := make(Metrics, len(m))
	c.Extend(m)
	return c
}

// Message is one line on stdout (ChildMsg in protocol.rs, tagged by "msg"): "failed" carries
// error, every other message metrics.
type Message struct {
	Msg     string
	Metrics Metrics
	Error   string
}

// MarshalJSON writes the message as ChildMsg's serde form.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.Msg == "failed" {
		return json.Marshal(struct {
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}{m.Msg, m.Error})
	}
	finite := make(Metrics, len(m.Metrics))
	for k, v := range m.Metrics {
		// JSON cannot carry NaN or infinities; such a figure is left out.
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			finite[k] = v
		}
	}
	return json.Marshal(struct {
		Msg     string  `json:"msg"`
		Metrics Metrics `json:"metrics"`
	}{m.Msg, finite})
}

// Commands from the orchestrator (Command in protocol.rs).
const (
	CmdMark    = "mark"
	CmdProceed = "proceed"
)

// IO is the child's two pipes: messages out on stdout, commands in on stdin.
type IO struct {
	mu       sync.Mutex
	out      *bufio.Writer
	commands chan string
}

// Start starts the stdin reader. When stdin closes the process exits at once: the orchestrator
// is gone (finished, failed or killed), and a child must never outlive it.
func Start() *IO {
	io := &IO{out: bufio.NewWriter(os.Stdout), commands: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			var cmd string
			if err := json.Unmarshal([]byte(line), &cmd); err != nil || (cmd != CmdMark && cmd != CmdProceed) {
				fmt.Fprintf(os.Stderr, "%s: ignoring command %q\n", os.Args[0], line)
				continue
			}
			io.commands <- cmd
		}
		os.Exit(3)
	}()
	return io
}

// Send writes one message line to stdout.
func (io *IO) Send(msg Message) {
	line, err := json.Marshal(msg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: encoding %q: %v\n", os.Args[0], msg.Msg, err)
		return
	}
	io.mu.Lock()
	defer io.mu.Unlock()
	// A failed write means the orchestrator is gone; the stdin reader ends the process.
	_, _ = io.out.Write(append(line, '\n'))
	_ = io.out.Flush()
}

// Expect waits for the orchestrator's next command and checks that it is want.
func (io *IO) Expect(want string) error {
	select {
	case cmd := <-io.commands:
		if cmd != want {
			return fmt.Errorf("expected command %q, got %q", want, cmd)
		}
		return nil
	case <-time.After(PhaseTimeout):
		return fmt.Errorf("timed out after %s waiting for command %q", PhaseTimeout, want)
	}
}

// Mark is the relist handshake: wait for "mark", reset the peak counters, report the steady state.
func (io *IO) Mark() (Metrics, error) {
	if err := io.Expect(CmdMark); err != nil {
		return nil, err
	}
	ResetPeaks()
	m := MemoryMetrics()
	io.Send(Message{Msg: "marked", Metrics: m.Clone()})
	return m, nil
}
