// Command client-go-child is the client-go side of informer-bench: one measured child process
// that runs one (scenario, implementation) pair with k8s.io/client-go and reports, exactly as
// `informer-bench child` does for informer-rs and kube-runtime (benches/src/protocol.rs).
//
// It is started as `client-go-child child --scenario S --impl I --url U …` with the arguments the
// orchestrator gives every child. It prints one JSON message per line on stdout ({"msg":
// "synced"|"marked"|"done"|"failed", …}) and reads one JSON command per line on stdin ("mark",
// "proceed"). When stdin closes, the process exits at once, so it never outlives the run.
//
// `cargo xtask bench` builds it with `go build -trimpath -o target/bench/client-go-child
// ./benches/client-go`; see BENCHMARKS.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Implementation names (Impl::ClientGo and Impl::ClientGoJson in protocol.rs).
const (
	// implDefault is client-go as its users run it: no content type configured, so the typed
	// clients of built-in kinds ask for protobuf (Accept: application/vnd.kubernetes.protobuf,
	// application/json; UseProtobufAsDefaultIfPreferred, client-go v0.32 and later).
	implDefault = "client-go"
	// implJSON is client-go forced to JSON (ContentType and AcceptContentTypes application/json),
	// a setting its users get only when they ask for it.
	implJSON = "client-go-json"
)

// spec is the child's command line (ChildSpec in benches/src/child/mod.rs, plus --kubeconfig).
type spec struct {
	scenario        string
	impl            string
	url             string
	kubeconfig      string
	pods            int
	namespaces      int
	objects         int
	labelSelector   string
	updateRounds    uint64
	finalGeneration uint64
	sentinel        string
	queryMS         int
	pageSize        int64
	paged           bool
	gzip            bool
	// clusterURLs is every cluster's server in scenario clusters (--cluster-urls, comma-separated).
	clusterURLs []string
}

func parseSpec(args []string) (*spec, error) {
	// The orchestrator starts every child as `<program> child --scenario …`.
	if len(args) > 0 && args[0] == "child" {
		args = args[1:]
	}
	s := &spec{}
	fs := flag.NewFlagSet("client-go-child", flag.ContinueOnError)
	fs.StringVar(&s.scenario, "scenario", "", "the scenario to run")
	fs.StringVar(&s.impl, "impl", implDefault, "client-go (its default: protobuf for built-in kinds) or client-go-json (forced to JSON)")
	fs.StringVar(&s.url, "url", "", "base URL of the API server (plain HTTP, no auth)")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "a kubeconfig to use instead of --url (TLS, tokens)")
	fs.IntVar(&s.pods, "pods", 0, "number of seeded Pods")
	fs.IntVar(&s.namespaces, "namespaces", 1, "number of namespaces the Pods are spread over")
	fs.IntVar(&s.objects, "objects", 0, "objects the cache holds once synced")
	fs.StringVar(&s.labelSelector, "label-selector", "", "label selector for LIST and WATCH")
	fs.Uint64Var(&s.updateRounds, "update-rounds", 2, "scenario updates: updates per Pod")
	fs.Uint64Var(&s.finalGeneration, "final-generation", 2, "scenario updates: the last generation")
	fs.StringVar(&s.sentinel, "sentinel", "relist-sentinel", "scenario relist: the Pod created after the relist")
	fs.IntVar(&s.queryMS, "query-ms", 1000, "scenario ns-query: query for at least this long (ms)")
	fs.Int64Var(&s.pageSize, "page-size", 500, "page size of every LIST")
	fs.BoolVar(&s.paged, "paged", false, "list in pages (WatchListClient off) instead of client-go's default, the streaming list")
	fs.BoolVar(&s.gzip, "gzip", false, "offer gzip (Go's transport decompresses); off sets DisableCompression")
	fs.Func("cluster-urls", "scenario clusters: every cluster's server, comma-separated", func(v string) error {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				s.clusterURLs = append(s.clusterURLs, u)
			}
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if s.scenario == "" {
		return nil, errors.New("--scenario is required")
	}
	if s.url == "" && s.kubeconfig == "" {
		return nil, errors.New("--url or --kubeconfig is required")
	}
	if s.scenario == "clusters" && len(s.clusterURLs) == 0 {
		return nil, errors.New("scenario clusters needs --cluster-urls")
	}
	if s.impl != implDefault && s.impl != implJSON {
		return nil, fmt.Errorf("--impl %q: this program runs %s and %s", s.impl, implDefault, implJSON)
	}
	return s, nil
}

func main() {
	io := startIO()
	s, err := parseSpec(os.Args[1:])
	if err != nil {
		io.Send(message{Msg: "failed", Error: err.Error()})
		os.Exit(2)
	}
	startHeapSampler()
	m, err := run(s, io)
	if err != nil {
		io.Send(message{Msg: "failed", Error: err.Error()})
		os.Exit(1)
	}
	io.Send(message{Msg: "done", Metrics: m})
	// Informer goroutines may still run; end the process without waiting for them.
	os.Exit(0)
}
