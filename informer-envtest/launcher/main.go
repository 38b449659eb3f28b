// Command informer-envtest-launcher is kube-apiserver and etcd, built from source for the Rust
// crate informer-envtest (which compiles these files in, and builds them with `go build` into
// its per-user cache). It runs either program with that program's own flags:
//
//	informer-envtest-launcher kube-apiserver ARGS...
//	informer-envtest-launcher etcd ARGS...
//	informer-envtest-launcher both ETCD-ARGS... -- KUBE-APISERVER-ARGS...
//
// `both` runs the two in one process (etcd in the background, kube-apiserver in front), which is
// how informer-envtest starts them. Invoked through a link named `kube-apiserver` or `etcd` (a
// directory such as KUBEBUILDER_ASSETS names), it is that program.
//
// informer-envtest picks the ports, writes the token and service-account keys, and passes every
// flag; kube-apiserver makes its own serving certificate in --cert-dir. Nothing here stops the
// programs: informer-envtest runs this under a watchdog that does.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	_ "time/tzdata" // CronJob time zones, as kube-apiserver's own main

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	mode, args := filepath.Base(os.Args[0]), os.Args[1:]
	if mode != "kube-apiserver" && mode != "etcd" {
		if len(args) == 0 {
			usage()
		}
		mode, args = args[0], args[1:]
	}
	switch mode {
	case "kube-apiserver":
		os.Exit(apiserver(args))
	case "etcd":
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "both":
		etcdArgs, apiserverArgs, ok := split(args)
		if !ok {
			usage()
		}
		// etcd exits the process itself when it fails; kube-apiserver waits for it to serve.
		go etcdmain.Main(append([]string{"etcd"}, etcdArgs...))
		os.Exit(apiserver(apiserverArgs))
	default:
		usage()
	}
}

// apiserver runs kube-apiserver's own command with args and returns its exit code.
func apiserver(args []string) int {
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(args)
	return cli.Run(cmd)
}

// split cuts args at the first "--".
func split(args []string) (before, after []string, ok bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return nil, nil, false
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: informer-envtest-launcher kube-apiserver ARGS... | etcd ARGS... | both ETCD-ARGS... -- KUBE-APISERVER-ARGS...")
	os.Exit(2)
}
