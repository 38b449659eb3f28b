package main

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

// metrics are the figures one child reports, by name (Metrics in protocol.rs).
type metrics map[string]float64

// extend copies every entry of other into m, replacing what m had.
func (m metrics) extend(other metrics) {
	for k, v := range other {
		m[k] = v
	}
}

// clone returns a copy of m.
func (m metrics) clone() metrics {
	c := make(metrics, len(m))
	c.extend(m)
	return c
}

// message is one line on stdout (ChildMsg in protocol.rs, tagged by "msg"): "failed" carries
// error, every other message metrics.
type message struct {
	Msg     string
	Metrics metrics
	Error   string
}

// MarshalJSON writes the message as ChildMsg's serde form.
func (m message) MarshalJSON() ([]byte, error) {
	if m.Msg == "failed" {
		return json.Marshal(struct {
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}{m.Msg, m.Error})
	}
	finite := make(metrics, len(m.Metrics))
	for k, v := range m.Metrics {
		// JSON cannot carry NaN or infinities; such a figure is left out.
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			finite[k] = v
		}
	}
	return json.Marshal(struct {
		Msg     string  `json:"msg"`
		Metrics metrics `json:"metrics"`
	}{m.Msg, finite})
}

// Commands from the orchestrator (Command in protocol.rs).
const (
	cmdMark    = "mark"
	cmdProceed = "proceed"
)

// childIO is the child's two pipes: messages out on stdout, commands in on stdin.
type childIO struct {
	mu       sync.Mutex
	out      *bufio.Writer
	commands chan string
}

// startIO starts the stdin reader. When stdin closes the process exits at once: the orchestrator
// is gone (finished, failed or killed), and a child must never outlive it.
func startIO() *childIO {
	io := &childIO{out: bufio.NewWriter(os.Stdout), commands: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			var cmd string
			if err := json.Unmarshal([]byte(line), &cmd); err != nil || (cmd != cmdMark && cmd != cmdProceed) {
				fmt.Fprintf(os.Stderr, "client-go-child: ignoring command %q\n", line)
				continue
			}
			io.commands <- cmd
		}
		os.Exit(3)
	}()
	return io
}

// send writes one message line to stdout.
func (io *childIO) send(msg message) {
	line, err := json.Marshal(msg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client-go-child: encoding %q: %v\n", msg.Msg, err)
		return
	}
	io.mu.Lock()
	defer io.mu.Unlock()
	// A failed write means the orchestrator is gone; the stdin reader ends the process.
	_, _ = io.out.Write(append(line, '\n'))
	_ = io.out.Flush()
}

// expect waits for the orchestrator's next command and checks that it is want.
func (io *childIO) expect(want string) error {
	select {
	case cmd := <-io.commands:
		if cmd != want {
			return fmt.Errorf("expected command %q, got %q", want, cmd)
		}
		return nil
	case <-time.After(phaseTimeout):
		return fmt.Errorf("timed out after %s waiting for command %q", phaseTimeout, want)
	}
}

// mark is the relist handshake: wait for "mark", reset the peak counters, report the steady state.
func (io *childIO) mark() (metrics, error) {
	if err := io.expect(cmdMark); err != nil {
		return nil, err
	}
	resetPeaks()
	m := memoryMetrics()
	io.send(message{Msg: "marked", Metrics: m.clone()})
	return m, nil
}
