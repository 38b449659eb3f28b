package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// discovery answers a client's discovery requests for the three kinds the operator caches.
var discovery = map[string]string{
	"/api":  `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
	"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`,
	"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[` +
		`{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","get","list","patch","update","watch"]},` +
		`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","get","list","patch","update","watch"]}]}`,
	"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[` +
		`{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["create","delete","get","list","patch","update","watch"]}]}`,
	"/version": `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`,
}

// request is what the server saw of the first request for one cached kind.
type request struct {
	accept string
	query  string
}

// firstRequests starts the operator against a server that answers discovery, records the first
// request for each cached kind and holds it open, and returns those requests.
func firstRequests(t *testing.T) map[string]request {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]request{}
	all := make(chan struct{})
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, ok := discovery[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
			return
		}
		kind := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		mu.Lock()
		if _, ok := seen[kind]; !ok && cached(r.URL.Path) {
			seen[kind] = request{accept: r.Header.Get("Accept"), query: r.URL.RawQuery}
			if len(seen) == 3 {
				close(all)
			}
		}
		mu.Unlock()
		query := r.URL.Query()
		switch {
		case query.Get("sendInitialEvents") == "true":
			// Refused: the reflector falls back to a LIST, so the Pod informer syncs and the
			// manager starts the controller, whose kinds are asked for next.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400}`))
			return
		case query.Get("watch") != "true":
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
			return
		}
		// A watch: held open, empty, until the test ends.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	// Runs before Close, which waits for the handlers.
	defer close(done)
	cfg, err := restConfig(&spec{url: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	mgr, _, err := newOperator(cfg, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	select {
	case <-all:
	case err := <-stopped:
		t.Fatalf("the manager stopped: %v", err)
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the operator did not ask for all three kinds within 30 s: %v", seen)
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	return seen
}

// controller-runtime's defaults, which the benchmark's Go side must run at: every kind the
// operator caches is asked for as protobuf first (controller-runtime sets the protobuf content
// type for the built-in kinds its scheme knows), with client-go's streaming initial list
// (WatchListClient, on by default since client-go 1.35). If an upgrade or a change to
// newOperator moved either, the scenario would compare other settings.
func TestTheOperatorAsksForProtobufAndTheStreamingInitialList(t *testing.T) {
	for kind, req := range firstRequests(t) {
		if !strings.HasPrefix(req.accept, protobufType) {
			t.Errorf("%s: Accept %q, want protobuf first", kind, req.accept)
		}
		if !strings.Contains(req.query, "sendInitialEvents=true") {
			t.Errorf("%s: the first request %q is not a streaming initial list", kind, req.query)
		}
	}
}

func TestTheObserverReportsWhatTheCacheGot(t *testing.T) {
	o := &observed{}
	answer := func(url, contentType string) {
		req := httptest.NewRequest(http.MethodGet, url, nil)
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {contentType}}}
		o.record(req, resp)
	}
	answer("/api/v1/pods?watch=true&sendInitialEvents=true", protobufType+";stream=watch")
	answer("/apis/apps/v1/deployments?limit=500", protobufType)
	if got := o.metrics(); got["watch_list"] != 1 || got["protobuf"] != 1 {
		t.Fatalf("got %v", got)
	}
	answer("/api/v1/configmaps?limit=500", "application/json")
	if got := o.metrics(); got["protobuf"] != 0 {
		t.Fatalf("one JSON answer must clear protobuf, got %v", got)
	}
}
