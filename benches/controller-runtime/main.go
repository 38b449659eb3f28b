// Command controller-runtime-child is the Go side of informer-bench's scenario 11 (operator):
// the operator of benches/src/fleet.rs written on controller-runtime, at its defaults, measured
// the way `informer-bench child` measures the Rust operator (benches/src/child/operator.rs).
//
// It is started as `controller-runtime-child child --scenario operator --impl controller-runtime
// --url U [--kubeconfig K] --pods P --namespaces N --objects D` and speaks the children's
// protocol (benches/childio): it runs the operator, says nothing until the orchestrator, which
// watches the ConfigMaps on the server, sends "proceed", then reports its peak RSS, heap, CPU
// seconds and counts in one "done" line and exits. When stdin closes, it exits at once.
//
// A module of its own, not a subcommand of benches/client-go: controller-runtime's packages
// register client-go's request and workqueue metrics when they are linked in (their init
// functions), which would change what the client-go column measures, and its dependencies
// would enter that module's version selection. `cargo xtask bench` builds it with
// `go build -trimpath -o target/bench/controller-runtime-child ./benches/controller-runtime`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/informer-rs/informer-rs/benches/childio"
)

const (
	// scenarioOperator is the one scenario this program runs (Scenario::Operator).
	scenarioOperator = "operator"
	// implControllerRuntime is its implementation name (Impl::ControllerRuntime).
	implControllerRuntime = "controller-runtime"
)

// spec is the child's command line: what the orchestrator gives scenario 11's children.
type spec struct {
	scenario    string
	impl        string
	url         string
	kubeconfig  string
	pods        int
	namespaces  int
	deployments int
}

func parseSpec(args []string) (*spec, error) {
	// The orchestrator starts every child as `<program> child --scenario …`.
	if len(args) > 0 && args[0] == "child" {
		args = args[1:]
	}
	s := &spec{}
	fs := flag.NewFlagSet("controller-runtime-child", flag.ContinueOnError)
	fs.StringVar(&s.scenario, "scenario", "", "the scenario to run (operator)")
	fs.StringVar(&s.impl, "impl", implControllerRuntime, "the implementation (controller-runtime)")
	fs.StringVar(&s.url, "url", "", "base URL of the API server (plain HTTP, no auth)")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "a kubeconfig to use instead of --url (TLS, tokens)")
	fs.IntVar(&s.pods, "pods", 0, "Pods the Deployments select")
	fs.IntVar(&s.namespaces, "namespaces", 1, "namespaces of the Deployments")
	fs.IntVar(&s.deployments, "objects", 0, "Deployments (one ConfigMap each)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if s.scenario != scenarioOperator {
		return nil, fmt.Errorf("--scenario %q: this program runs %s", s.scenario, scenarioOperator)
	}
	if s.impl != implControllerRuntime {
		return nil, fmt.Errorf("--impl %q: this program runs %s", s.impl, implControllerRuntime)
	}
	if s.url == "" && s.kubeconfig == "" {
		return nil, errors.New("--url or --kubeconfig is required")
	}
	return s, nil
}

func main() {
	io := childio.Start()
	s, err := parseSpec(os.Args[1:])
	if err != nil {
		io.Send(childio.Message{Msg: "failed", Error: err.Error()})
		os.Exit(2)
	}
	childio.StartHeapSampler()
	m, err := run(s, io)
	if err != nil {
		io.Send(childio.Message{Msg: "failed", Error: err.Error()})
		os.Exit(1)
	}
	io.Send(childio.Message{Msg: "done", Metrics: m})
	// The manager's goroutines may still run; end the process without waiting for them.
	os.Exit(0)
}
