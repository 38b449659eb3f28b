package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// watchListGate is the environment variable of client-go's WatchListClient feature gate.
const watchListGate = "KUBE_FEATURE_WatchListClient"

// run runs s.scenario with client-go and returns the final metrics. Each scenario uses client-go
// the way operators do: a SharedInformerFactory with no resync, the Pod informer (whose default
// indexer is the namespace index), event handlers, SetTransform for sync-strip and a metadata
// informer for sync-meta, mirroring what benches/src/child/ours.rs does with informer-rs.
func run(s *spec, io *childIO) (metrics, error) {
	if err := initialList(s.paged); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelling at the end of the scenario stops the informers.
	defer cancel()
	if s.scenario == "clusters" {
		// Its clock starts before the first cluster's configuration is built.
		return clusters(ctx, s)
	}
	cfg, err := restConfig(s)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	switch s.scenario {
	case "sync", "sync-paged":
		factory, inf, err := podInformer(cfg, s)
		if err != nil {
			return nil, err
		}
		factory.Start(ctx.Done())
		return synced(ctx, inf, start)
	case "sync-strip":
		factory, inf, err := podInformer(cfg, s)
		if err != nil {
			return nil, err
		}
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return nil, fmt.Errorf("setting the transform: %w", err)
		}
		factory.Start(ctx.Done())
		return synced(ctx, inf, start)
	case "sync-meta":
		client, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("building the metadata client: %w", err)
		}
		factory := metadatainformer.NewFilteredSharedInformerFactory(client, 0, metav1.NamespaceAll, tweak(s))
		inf := factory.ForResource(corev1.SchemeGroupVersion.WithResource("pods")).Informer()
		factory.Start(ctx.Done())
		return synced(ctx, inf, start)
	case "updates":
		factory, inf, err := podInformer(cfg, s)
		if err != nil {
			return nil, err
		}
		return updates(ctx, factory, inf, s, io, start)
	case "four":
		return four(ctx, cfg, s, io, start)
	case "relist":
		factory, inf, err := podInformer(cfg, s)
		if err != nil {
			return nil, err
		}
		return relist(ctx, factory, inf, s, io, start)
	case "ns-query":
		factory, inf, err := podInformer(cfg, s)
		if err != nil {
			return nil, err
		}
		lister := factory.Core().V1().Pods().Lister()
		factory.Start(ctx.Done())
		m, err := synced(ctx, inf, start)
		if err != nil {
			return nil, err
		}
		everything := labels.Everything()
		m.Extend(timeQueries(s.namespaces, time.Duration(s.queryMS)*time.Millisecond, func(ns string) int {
			// The namespaced lister is served by the informer's namespace index.
			pods, err := lister.Pods(ns).List(everything)
			if err != nil {
				return 0
			}
			return len(pods)
		}))
		return m, nil
	default:
		return nil, fmt.Errorf("scenario %s has no client-go side", s.scenario)
	}
}

// initialList sets client-go's WatchListClient gate for this process: off where the scenario pins
// the paged LIST (`--paged`), else unset, so client-go lists as it does by default (the
// streaming list since 1.35), whatever the orchestrator's environment holds. The gate is read
// once, on first use, so this must come before any client-go call.
func initialList(paged bool) error {
	if paged {
		if err := os.Setenv(watchListGate, "false"); err != nil {
			return fmt.Errorf("setting %s: %w", watchListGate, err)
		}
		return nil
	}
	if err := os.Unsetenv(watchListGate); err != nil {
		return fmt.Errorf("unsetting %s: %w", watchListGate, err)
	}
	return nil
}

// restConfig is the client configuration: the orchestrator's plain-HTTP test server, or a
// kubeconfig (TLS, tokens) when --kubeconfig is given; its server then wins over --url.
func restConfig(s *spec) (*rest.Config, error) {
	var cfg *rest.Config
	if s.kubeconfig != "" {
		loaded, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig %s: %w", s.kubeconfig, err)
		}
		cfg = loaded
	} else {
		cfg = &rest.Config{Host: s.url}
		// Without TLS, a dialer or a proxy, client-go hands the config http.DefaultTransport
		// (transport/cache.go), which ignores DisableCompression: it offers gzip and ungzips
		// on every request, so `--gzip` off still received gzip (issue 24). A dialer of our own
		// makes client-go build its own transport, as it always does against a real (TLS)
		// cluster, and that one honours DisableCompression.
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	// Neither informer-rs nor kube-runtime limits its request rate. client-go's default (5 QPS,
	// burst 10) would spread the 100 pages of a 50 000-Pod LIST over 18 s, so the benchmark
	// would time the limiter; a negative QPS turns it off.
	cfg.QPS = -1
	// Go's transport offers gzip unless told not to; the orchestrator's --gzip decides for all.
	cfg.DisableCompression = !s.gzip
	if s.impl == implJSON {
		// client-go forced to JSON both ways: what users get only when they set it.
		cfg.ContentType = runtime.ContentTypeJSON
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
	}
	// Otherwise (client-go's default) ContentType and AcceptContentTypes stay empty: the typed
	// clients of built-in kinds then ask for protobuf with JSON as the fallback
	// (rest.Request.UseProtobufAsDefaultIfPreferred, client-go v0.32 and later), and the
	// dynamic and metadata clients for what they always ask. accept_test.go checks the header.
	return cfg, nil
}

// tweak applies the run's label selector and page size to every request of an informer.
func tweak(s *spec) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		if s.labelSelector != "" {
			o.LabelSelector = s.labelSelector
		}
		// The reflector's pager sets a limit (500 by default) on LIST pages only; a watch, or
		// a LIST the reflector wants unpaged, has none and keeps none.
		if o.Limit > 0 && s.pageSize > 0 {
			o.Limit = s.pageSize
		}
	}
}

// podInformer is the Pod informer of a fresh factory (no resync), the run's selector applied.
func podInformer(cfg *rest.Config, s *spec) (informers.SharedInformerFactory, cache.SharedIndexInformer, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building the clientset: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(tweak(s)))
	return factory, factory.Core().V1().Pods().Informer(), nil
}

// stripManagedFields is the transform of sync-strip (strip_managed_fields in informer-rs).
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// waitFor waits for every checker, failing after phaseTimeout with a message naming what.
func waitFor(ctx context.Context, what string, checkers ...cache.DoneChecker) error {
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	if !cache.WaitFor(ctx, "", checkers...) {
		return fmt.Errorf("timed out after %s waiting for %s", phaseTimeout, what)
	}
	return nil
}

// synced waits for the informer's first sync and reports its time, size and memory (synced in
// ours.rs, the same metrics).
func synced(ctx context.Context, inf cache.SharedIndexInformer, start time.Time) (metrics, error) {
	if err := waitFor(ctx, "the sync", inf.HasSyncedChecker()); err != nil {
		return nil, err
	}
	syncS := time.Since(start).Seconds()
	n := len(inf.GetStore().ListKeys())
	objects := float64(max(n, 1))
	m := metrics{
		"sync_s":        syncS,
		"objects":       float64(n),
		"objects_per_s": objects / max(syncS, 1e-9),
	}
	m.Extend(memoryMetrics())
	// Everything the process holds after the sync, per cached object (the runtime, the client and
	// the informer's indices included), as for informer-rs.
	m["heap_bytes_per_object"] = m["heap_mib"] * mib / objects
	return m, nil
}

// updates is the updates scenario: one handler tracks the generation annotation of every updated
// Pod; after the sync the orchestrator writes the updates while the server holds the watch.
func updates(ctx context.Context, factory informers.SharedInformerFactory, inf cache.SharedIndexInformer, s *spec, io *childIO, start time.Time) (metrics, error) {
	tracker := newUpdateTracker(s.objects, s.finalGeneration)
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				tracker.onGeneration(pod.Annotations[generationAnnotation])
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the handler: %w", err)
	}
	factory.Start(ctx.Done())
	m, err := synced(ctx, inf, start)
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, "the handler's initial adds", reg.HasSyncedChecker()); err != nil {
		return nil, err
	}
	// update_phase in track.rs: the steady heap, the peaks reset, then the updates.
	m["steady_heap_mib"] = m["heap_mib"]
	resetPeaks()
	io.Send(message{Msg: "synced", Metrics: m.Clone()})
	delivered, err := tracker.finished(s.updateRounds * uint64(s.objects))
	if err != nil {
		return nil, err
	}
	m.Extend(delivered)
	m.Extend(memoryMetrics())
	return m, nil
}

// four is the four-consumers scenario: four handlers on one shared informer (one watch).
func four(ctx context.Context, cfg *rest.Config, s *spec, io *childIO, start time.Time) (metrics, error) {
	factory, inf, err := podInformer(cfg, s)
	if err != nil {
		return nil, err
	}
	var adds atomic.Uint64
	var checkers []cache.DoneChecker
	for range 4 {
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { adds.Add(1) },
		})
		if err != nil {
			return nil, fmt.Errorf("adding a handler: %w", err)
		}
		checkers = append(checkers, reg.HasSyncedChecker())
	}
	factory.Start(ctx.Done())
	// Per-handler sync: the informer synced and this handler ran every initial add.
	if err := waitFor(ctx, "the handlers' sync", checkers...); err != nil {
		return nil, err
	}
	m := metrics{
		"sync_s":       time.Since(start).Seconds(),
		"objects":      float64(len(inf.GetStore().ListKeys())),
		"handler_adds": float64(adds.Load()),
	}
	m.Extend(memoryMetrics())
	io.Send(message{Msg: "synced", Metrics: m.Clone()})
	if err := io.Expect(cmdProceed); err != nil {
		return nil, err
	}
	return m, nil
}

// relist is the relist scenario: after the sync the orchestrator marks the steady state, forces a
// 410 and creates a sentinel Pod; the peak between the mark and the sentinel is the relist's.
func relist(ctx context.Context, factory informers.SharedInformerFactory, inf cache.SharedIndexInformer, s *spec, io *childIO, start time.Time) (metrics, error) {
	sent := newSentinel(s.sentinel)
	onPod := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			sent.onPod(pod.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onPod,
		UpdateFunc: func(_, obj any) { onPod(obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding the handler: %w", err)
	}
	factory.Start(ctx.Done())
	sync, err := synced(ctx, inf, start)
	if err != nil {
		return nil, err
	}
	io.Send(message{Msg: "synced", Metrics: sync})
	// relist_phase in track.rs.
	steady, err := io.Mark()
	if err != nil {
		return nil, err
	}
	t := time.Now()
	select {
	case <-sent.seen:
	case <-time.After(phaseTimeout):
		return nil, fmt.Errorf("timed out after %s waiting for the relist sentinel", phaseTimeout)
	}
	relistS := time.Since(t).Seconds()
	after := memoryMetrics()
	return metrics{
		"steady_heap_mib":         steady["heap_mib"],
		"relist_heap_peak_mib":    after["heap_peak_mib"],
		"relist_peak_over_steady": after["heap_peak_mib"] / max(steady["heap_mib"], 1e-9),
		"heap_after_mib":          after["heap_mib"],
		"steady_rss_mib":          steady["rss_mib"],
		"relist_rss_peak_mib":     after["rss_peak_mib"],
		"relist_s":                relistS,
		"objects":                 float64(len(inf.GetStore().ListKeys())),
	}, nil
}
