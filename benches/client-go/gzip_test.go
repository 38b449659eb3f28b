package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// countingListener counts the bytes the server writes to every connection it accepts: what the
// client receives on the wire, as the orchestrator's loopback count sees it.
type countingListener struct {
	net.Listener
	written *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, written: l.written}, nil
}

type countingConn struct {
	net.Conn
	written *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	// Counted before the write, then corrected for a short one: the client can read a small
	// body, and the test read the count, before the server's Write has returned.
	c.written.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	if n < len(p) {
		c.written.Add(int64(n - len(p)))
	}
	return n, err
}

// podListBody is a PodList of n Pods that repeat most of their bytes, so gzip shrinks it a lot.
func podListBody(t *testing.T, n int) []byte {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{
			"metadata": map[string]any{"name": fmt.Sprintf("web-%d", i), "namespace": "bench-000"},
			"spec": map[string]any{"containers": []map[string]any{{
				"name": "app", "image": "registry.example.com/storefront/app:v1.2.3",
				"args": []string{strings.Repeat("--flag=value ", 40)},
			}}},
		}
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "7"}, "items": items,
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// listOnce lists Pods once with the child's client configuration and returns what the server
// wrote on the wire and the Accept-Encoding the client sent.
func listOnce(t *testing.T, gzipOn bool, body []byte) (int64, string) {
	t.Helper()
	var written atomic.Int64
	var mu sync.Mutex
	acceptEncoding := ""
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		acceptEncoding = r.Header.Get("Accept-Encoding")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// Like kube-apiserver: gzip exactly when the client offers it.
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			if _, err := zw.Write(body); err != nil {
				t.Error(err)
			}
			if err := zw.Close(); err != nil {
				t.Error(err)
			}
			return
		}
		if _, err := w.Write(body); err != nil {
			t.Error(err)
		}
	}))
	srv.Listener = countingListener{Listener: srv.Listener, written: &written}
	srv.Start()
	defer srv.Close()
	cfg, err := restConfig(&spec{url: srv.URL, impl: implJSON, gzip: gzipOn})
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 200 {
		t.Fatalf("listed %d Pods, want 200", len(list.Items))
	}
	mu.Lock()
	defer mu.Unlock()
	return written.Load(), acceptEncoding
}

// Issue 24: with --gzip off the child must receive the uncompressed bodies (client-go's
// http.DefaultTransport used to offer gzip regardless), and with --gzip on the compressed ones.
func TestGzipOffReceivesTheUncompressedBody(t *testing.T) {
	body := podListBody(t, 200)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	off, offered := listOnce(t, false, body)
	if strings.Contains(offered, "gzip") {
		t.Fatalf("gzip off, yet the client sent Accept-Encoding %q", offered)
	}
	if off < int64(len(body)) {
		t.Fatalf("gzip off: received %d bytes on the wire, less than the %d-byte body", off, len(body))
	}

	on, offered := listOnce(t, true, body)
	if !strings.Contains(offered, "gzip") {
		t.Fatalf("gzip on, yet the client sent Accept-Encoding %q", offered)
	}
	if on >= int64(len(body)) || on < int64(zipped.Len()) {
		t.Fatalf("gzip on: received %d bytes, want the gzip size (%d) plus headers, below %d",
			on, zipped.Len(), len(body))
	}
}
