package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/informer-rs/informer-rs/benches/childio"
)

// clusters is scenario 12: one SharedInformerFactory per cluster in this one process, as
// sigs.k8s.io/multicluster-runtime builds one cache per engaged cluster. Each cluster gets its own
// rest.Config and clientset at client-go's defaults (restConfig: no content type, so Pods are read
// as protobuf; WatchListClient as the library sets it, the streaming list), a factory with no
// resync and its Pod informer; every factory is started as it is built. The clock starts before
// the first configuration and stops once every Pod informer has synced; then the heap, RSS and CPU
// seconds (the Rust fleet's side reports the same figures, benches/src/child/clusters.rs).
func clusters(ctx context.Context, s *spec) (metrics, error) {
	start := time.Now()
	checkers := make([]cache.DoneChecker, 0, len(s.clusterURLs))
	stores := make([]cache.Store, 0, len(s.clusterURLs))
	for _, url := range s.clusterURLs {
		one := *s
		one.url = url
		one.kubeconfig = ""
		cfg, err := restConfig(&one)
		if err != nil {
			return nil, err
		}
		factory, inf, err := podInformer(cfg, &one)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", url, err)
		}
		factory.Start(ctx.Done())
		checkers = append(checkers, inf.HasSyncedChecker())
		stores = append(stores, inf.GetStore())
	}
	if err := waitFor(ctx, "every cluster's sync", checkers...); err != nil {
		return nil, err
	}
	syncS := time.Since(start).Seconds()
	n := 0
	for _, store := range stores {
		n += len(store.ListKeys())
	}
	if n != s.objects {
		return nil, fmt.Errorf("the factories cached %d Pods; the servers hold %d", n, s.objects)
	}
	cpu, err := childio.CPUSeconds()
	if err != nil {
		return nil, fmt.Errorf("reading /proc/self/stat: %w", err)
	}
	objects := float64(max(n, 1))
	m := metrics{
		"sync_s":        syncS,
		"clusters":      float64(len(s.clusterURLs)),
		"objects":       float64(n),
		"objects_per_s": objects / max(syncS, 1e-9),
		"cpu_s":         cpu,
	}
	m.Extend(memoryMetrics())
	m["heap_bytes_per_object"] = m["heap_mib"] * mib / objects
	return m, nil
}
