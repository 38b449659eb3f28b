package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/informer-rs/informer-rs/benches/childio"
)

// The label on every ConfigMap the operator writes (MANAGED_BY in benches/src/fleet.rs).
const (
	managedByKey   = "app.kubernetes.io/managed-by"
	managedByValue = "bench-operator"
)

// configMapName is the ConfigMap the operator writes for a Deployment (config_map_name in
// benches/src/fleet.rs).
func configMapName(deployment string) string {
	return deployment + "-summary"
}

// reconciler makes each Deployment's ConfigMap say its replicas and how many Pods of its
// namespace its selector matches, reading both from the manager's cache.
type reconciler struct {
	client.Client
	start time.Time
	// firstReconcile is the nanoseconds from start to the first reconcile (0: none yet).
	firstReconcile atomic.Int64
	reconciles     atomic.Uint64
	writes         atomic.Uint64
	errors         atomic.Uint64
}

// Reconcile counts and runs one reconcile.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.firstReconcile.CompareAndSwap(0, int64(time.Since(r.start)))
	res, err := r.reconcile(ctx, req)
	r.reconciles.Add(1)
	if err != nil {
		r.errors.Add(1)
	}
	return res, err
}

func (r *reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d appsv1.Deployment
	if err := r.Get(ctx, req.NamespacedName, &d); err != nil {
		// Deleted: the ConfigMap's owner reference lets the garbage collector remove it.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("the Deployment's selector: %w", err)
	}
	// From the cache's cluster-wide Pod informer (the List waits for it to sync).
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the Deployment's Pods: %w", err)
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: configMapName(d.Name), Namespace: d.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[managedByKey] = managedByValue
		cm.Data = map[string]string{
			"replicas": strconv.Itoa(int(replicas)),
			"pods":     strconv.Itoa(len(pods.Items)),
		}
		return controllerutil.SetControllerReference(&d, cm, r.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		r.writes.Add(1)
	}
	return ctrl.Result{}, nil
}

// newOperator builds the manager and the controller, as a controller-runtime operator is
// written: the manager at its defaults (its cache reads built-in kinds as protobuf, with
// client-go's streaming initial list), a controller for Deployments that owns ConfigMaps with
// the default MaxConcurrentReconciles (1), and the cache's Pod informer, cluster-wide. Only the
// metrics server is off (it would need a free port; the metrics are recorded either way) and
// leader election stays off, its default.
func newOperator(cfg *rest.Config, start time.Time) (ctrl.Manager, *reconciler, error) {
	// Logs are discarded, as the Rust child has no subscriber; this also keeps
	// controller-runtime from warning that no logger was set.
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	r := &reconciler{Client: mgr.GetClient(), start: start}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Complete(r)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the controller: %w", err)
	}
	// The cluster-wide Pod informer, created now and started with the cache.
	if _, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{}); err != nil {
		return nil, nil, fmt.Errorf("the Pod informer: %w", err)
	}
	return mgr, r, nil
}

// restConfig loads the client configuration as an operator does, through ctrl.GetConfig()
// (which reads $KUBECONFIG and applies controller-runtime's defaults), from the orchestrator's
// kubeconfig or, for the plain-HTTP test server, from one written for its URL.
func restConfig(s *spec) (*rest.Config, error) {
	path := s.kubeconfig
	if path == "" {
		dir, err := os.MkdirTemp("", "controller-runtime-child")
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "kubeconfig")
		kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: %q}}]
users: [{name: bench, user: {}}]
contexts: [{name: bench, context: {cluster: bench, user: bench}}]
current-context: bench
`, s.url)
		if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
			return nil, err
		}
	}
	if err := os.Setenv("KUBECONFIG", path); err != nil {
		return nil, err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// run runs the operator until the orchestrator has seen every ConfigMap ("proceed"), then
// reports.
func run(s *spec, io *childio.IO) (childio.Metrics, error) {
	start := time.Now()
	cfg, err := restConfig(s)
	if err != nil {
		return nil, err
	}
	seen := &observed{}
	cfg.Wrap(seen.wrap)
	mgr, r, err := newOperator(cfg, start)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	proceed := make(chan error, 1)
	go func() { proceed <- io.Expect(childio.CmdProceed) }()
	select {
	case err := <-proceed:
		if err != nil {
			return nil, err
		}
	case err := <-stopped:
		return nil, fmt.Errorf("the manager stopped before the orchestrator saw every ConfigMap: %v", err)
	}
	// CPU first: MemoryMetrics runs a collection, which is not the operator's work.
	cpu, err := childio.CPUSeconds()
	if err != nil {
		return nil, fmt.Errorf("reading /proc/self/stat: %w", err)
	}
	m := childio.MemoryMetrics()
	m["cpu_s"] = cpu
	m["reconciles"] = float64(r.reconciles.Load())
	m["writes"] = float64(r.writes.Load())
	m["reconcile_errors"] = float64(r.errors.Load())
	if first := r.firstReconcile.Load(); first > 0 {
		m["first_reconcile_s"] = time.Duration(first).Seconds()
	}
	m.Extend(seen.metrics())
	return m, nil
}
