package main

import (
	"fmt"
	"strconv"
	"sync"
	"time"
)

// generationAnnotation is the annotation whose value is a Pod's update generation
// (GENERATION_ANNOTATION in protocol.rs).
const generationAnnotation = "bench.informer-rs.io/generation"

// updateTracker is the updates scenario's handler state (UpdateTracker in track.rs): it counts
// update notifications and knows when every Pod has reached the final generation. Completion is
// by final state, not by count, so a client that coalesced updates would still finish.
type updateTracker struct {
	finalGeneration uint64
	expected        int

	mu      sync.Mutex
	events  uint64
	atFinal int
	first   time.Time
	last    time.Time
	done    chan struct{}
}

func newUpdateTracker(expected int, finalGeneration uint64) *updateTracker {
	return &updateTracker{finalGeneration: finalGeneration, expected: expected, done: make(chan struct{})}
}

// onGeneration is the handler body for a Pod whose generation annotation is generation.
func (t *updateTracker) onGeneration(generation string) {
	g, err := strconv.ParseUint(generation, 10, 64)
	if err != nil {
		g = 0
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events++
	if t.first.IsZero() {
		t.first = now
	}
	if g == t.finalGeneration {
		t.atFinal++
		if t.atFinal == t.expected {
			t.last = now
			close(t.done)
		}
	}
}

// finished waits until every Pod reached the final generation, then reports the delivery rate of
// updates notifications.
func (t *updateTracker) finished(updates uint64) (metrics, error) {
	select {
	case <-t.done:
	case <-time.After(phaseTimeout):
		return nil, fmt.Errorf("timed out after %s waiting for the updates", phaseTimeout)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	secs := max(t.last.Sub(t.first).Seconds(), 1e-9)
	return metrics{
		"handler_calls": float64(t.events),
		"deliver_s":     secs,
		"events_per_s":  float64(updates) / secs,
	}, nil
}

// sentinel is the relist scenario's handler state: has the sentinel Pod arrived?
type sentinel struct {
	name string
	seen chan struct{}
}

func newSentinel(name string) *sentinel {
	return &sentinel{name: name, seen: make(chan struct{}, 1)}
}

// onPod is the handler body for an added or updated Pod.
func (s *sentinel) onPod(name string) {
	if name != s.name {
		return
	}
	// The buffered slot keeps a sentinel that arrives before anyone waits.
	select {
	case s.seen <- struct{}{}:
	default:
	}
}

// namespaceName is the name of the n-th benchmark namespace (namespace_name in pods.rs).
func namespaceName(n int) string {
	return fmt.Sprintf("bench-%03d", n)
}

// timeQueries runs query over every namespace, round after round, until atLeast has passed, and
// reports the mean time per query and the objects each returned (time_queries in track.rs).
func timeQueries(namespaces int, atLeast time.Duration, query func(ns string) int) metrics {
	names := make([]string, max(namespaces, 1))
	for i := range names {
		names[i] = namespaceName(i)
	}
	start := time.Now()
	var queries, results uint64
	for {
		for _, ns := range names {
			results += uint64(query(ns))
			queries++
		}
		if time.Since(start) >= atLeast {
			break
		}
	}
	secs := time.Since(start).Seconds()
	return metrics{
		"queries":           float64(queries),
		"query_us":          secs * 1e6 / float64(queries),
		"results_per_query": float64(results) / float64(queries),
	}
}
