package main

import (
	"net/http"
	"strings"
	"sync"
)

// protobufType is the Content-Type of a Kubernetes protobuf response.
const protobufType = "application/vnd.kubernetes.protobuf"

// observed records what the manager's cache asked for and got on the kinds it caches: whether
// any request asked for the streaming initial list (sendInitialEvents=true, client-go's
// WatchListClient) and which share of the answers were protobuf. The child reports it, so the
// results say what this side used on either server (the orchestrator checks the same from the
// test server's log).
type observed struct {
	mu        sync.Mutex
	watchList bool
	answers   int
	protobuf  int
}

// cached reports whether path is a collection of a kind the operator caches.
func cached(path string) bool {
	for _, kind := range []string{"/pods", "/configmaps", "/deployments"} {
		if strings.HasSuffix(path, kind) {
			return true
		}
	}
	return false
}

// wrap is a rest.Config transport wrapper that records each request to a cached kind.
func (o *observed) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if req.Method == http.MethodGet && cached(req.URL.Path) {
			o.record(req, resp)
		}
		return resp, err
	})
}

func (o *observed) record(req *http.Request, resp *http.Response) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if req.URL.Query().Get("sendInitialEvents") == "true" {
		o.watchList = true
	}
	if resp != nil && resp.StatusCode == http.StatusOK {
		o.answers++
		if strings.HasPrefix(resp.Header.Get("Content-Type"), protobufType) {
			o.protobuf++
		}
	}
}

// metrics reports watch_list (1: the streaming initial list was asked for) and protobuf (1: every
// answer on a cached kind was protobuf).
func (o *observed) metrics() map[string]float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[string]float64{"watch_list": 0, "protobuf": 0}
	if o.watchList {
		m["watch_list"] = 1
	}
	if o.answers > 0 && o.protobuf == o.answers {
		m["protobuf"] = 1
	}
	return m
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return f(req)
}
