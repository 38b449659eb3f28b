// Command informer-envtest-launcher is kube-apiserver and etcd, built from source for the Rust
// crate informer-envtest (which compiles these files in, and builds them with `go build` into
// its per-user cache). It runs either program with that program's own flags:
//
//	informer-envtest-launcher kube-apiserver ARGS...
//	informer-envtest-launcher etcd ARGS...
//	informer-envtest-launcher both ETCD-ARGS... -- KUBE-APISERVER-ARGS...
//	informer-envtest-launcher garbage-collector --kubeconfig FILE
//
// `both` runs the two in one process (etcd in the background, kube-apiserver in front), which is
// how informer-envtest starts them. Invoked through a link named `kube-apiserver` or `etcd` (a
// directory such as KUBEBUILDER_ASSETS names), it is that program.
//
// `garbage-collector` is kube-controller-manager's garbage collector alone
// (k8s.io/kubernetes/pkg/controller/garbagecollector), set up as kube-controller-manager sets it
// up: metadata informers for every resource discovery lists, a discovery REST mapper reset every
// 30 s, its default ignored resources and 20 workers. It is the same controller code, without the
// rest of kube-controller-manager (the decision record of informer-envtest's garbage collector).
//
// informer-envtest picks the ports, writes the token and service-account keys, and passes every
// flag; kube-apiserver makes its own serving certificate in --cert-dir. Nothing here stops the
// programs: informer-envtest runs this under a watchdog that does.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	_ "time/tzdata" // CronJob time zones, as kube-apiserver's own main

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/apimachinery/pkg/util/wait"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
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
	case "garbage-collector":
		if len(args) != 2 || args[0] != "--kubeconfig" {
			usage()
		}
		if err := garbageCollector(args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "garbage-collector: %v\n", err)
			os.Exit(1)
		}
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

// The garbage collector's settings as kube-controller-manager's defaults give them:
// --kube-api-qps and --kube-api-burst, --concurrent-gc-syncs, and the period of its discovery
// resync and REST mapper reset.
const (
	gcQPS      = 20
	gcBurst    = 30
	gcWorkers  = 20
	gcResync   = 30 * time.Second
	gcMaxStart = 10 * time.Second
)

// garbageCollector runs kube-controller-manager's garbage collector against the server in
// kubeconfig until SIGTERM or SIGINT.
func garbageCollector(kubeconfig string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	config.QPS, config.Burst = gcQPS, gcBurst
	config.UserAgent = "informer-envtest-garbage-collector"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	// Each deletion takes two API calls, so kube-controller-manager doubles the collector's QPS.
	gcConfig := rest.CopyConfig(config)
	gcConfig.QPS *= 2
	gcMetadata, err := metadata.NewForConfig(gcConfig)
	if err != nil {
		return err
	}
	informerMetadata, err := metadata.NewForConfig(config)
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, gcMaxStart, true, func(ctx context.Context) (bool, error) {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/healthz").DoRaw(ctx)
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("the API server did not answer /healthz within %v: %w", gcMaxStart, err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(client.Discovery()))
	go wait.Until(mapper.Reset, gcResync, ctx.Done())
	sharedInformers := informers.NewSharedInformerFactory(client, 0)
	metadataInformers := metadatainformer.NewSharedInformerFactory(informerMetadata, 0)
	started := make(chan struct{})
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, gcMetadata, mapper,
		garbagecollector.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(sharedInformers, metadataInformers), started)
	if err != nil {
		return fmt.Errorf("setting up the garbage collector: %w", err)
	}
	go gc.Run(ctx, gcWorkers, gcResync)
	go gc.Sync(ctx, client.Discovery(), gcResync)
	sharedInformers.Start(ctx.Done())
	metadataInformers.Start(ctx.Done())
	close(started)
	klog.InfoS("garbage collector started", "server", config.Host)
	<-ctx.Done()
	return nil
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
	fmt.Fprintln(os.Stderr, "usage: informer-envtest-launcher kube-apiserver ARGS... | etcd ARGS... | both ETCD-ARGS... -- KUBE-APISERVER-ARGS... | garbage-collector --kubeconfig FILE")
	os.Exit(2)
}
