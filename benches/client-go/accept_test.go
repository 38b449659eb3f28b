package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// protobufFirst is what client-go's typed clients send for built-in kinds when the rest.Config
// names no content type (rest.Request.UseProtobufAsDefault).
const protobufFirst = "application/vnd.kubernetes.protobuf,application/json"

// acceptOfInformer runs the Pod informer of the child's configuration for impl against a
// server that records the Accept header of the informer's LIST and WATCH, and returns both.
func acceptOfInformer(t *testing.T, impl string) (list, watch string) {
	t.Helper()
	var mu sync.Mutex
	watching := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept := r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			mu.Lock()
			watch = accept
			mu.Unlock()
			once.Do(func() { close(watching) })
			w.WriteHeader(http.StatusOK)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			<-r.Context().Done()
			return
		}
		mu.Lock()
		list = accept
		mu.Unlock()
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`))
	}))
	defer srv.Close()
	if err := initialList(true); err != nil {
		t.Fatal(err)
	}
	cfg, err := restConfig(&spec{url: srv.URL, impl: impl, pageSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	factory, inf, err := podInformer(cfg, &spec{pageSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if err := waitFor(ctx, "the sync", inf.HasSyncedChecker()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watching:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer opened no watch within 30 s of its sync")
	}
	cancel()
	factory.Shutdown()
	mu.Lock()
	defer mu.Unlock()
	return list, watch
}

// The benchmark's client-go column is client-go's default, and its default reads Pods as
// protobuf: the informer's LIST and WATCH both ask for protobuf first. If a client-go upgrade
// or a change to restConfig broke this, every headline ratio would be against another setting.
func TestTheDefaultColumnAsksForProtobuf(t *testing.T) {
	list, watch := acceptOfInformer(t, implDefault)
	if list != protobufFirst || watch != protobufFirst {
		t.Fatalf("client-go's default sent Accept %q (LIST) and %q (WATCH), want %q", list, watch, protobufFirst)
	}
}

// The secondary column is forced to JSON both ways.
func TestTheJSONColumnAsksForJSONOnly(t *testing.T) {
	list, watch := acceptOfInformer(t, implJSON)
	if list != "application/json" || watch != "application/json" {
		t.Fatalf("client-go-json sent Accept %q (LIST) and %q (WATCH), want application/json", list, watch)
	}
}

// Where a scenario pins the paged LIST the gate is off; elsewhere it is unset, so client-go
// lists as it does by default, whatever the orchestrator's environment said.
func TestTheInitialListGateIsOffOnlyWhenPaged(t *testing.T) {
	t.Setenv(watchListGate, "true")
	if err := initialList(true); err != nil {
		t.Fatal(err)
	}
	if v, _ := os.LookupEnv(watchListGate); v != "false" {
		t.Fatalf("paged: %s=%q, want false", watchListGate, v)
	}
	if err := initialList(false); err != nil {
		t.Fatal(err)
	}
	if v, set := os.LookupEnv(watchListGate); set {
		t.Fatalf("the default: %s=%q, want it unset", watchListGate, v)
	}
}
