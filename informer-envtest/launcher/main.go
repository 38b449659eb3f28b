// Command informer-envtest-launcher runs etcd and kube-apiserver in one process on loopback, the
// way controller-runtime's envtest runs the two binaries: no nodes, no controllers, TLS with a
// certificate authority of its own and a static bearer token for one cluster-admin user.
//
// It is started by the Rust crate informer-envtest, which builds it from this directory with
// `go build` (outputs under the workspace's target/). It prints one line of JSON on stdout once
// both servers listen:
//
//	{"server":"https://127.0.0.1:PORT","ca_file":"DIR/pki/ca.crt","token":"...","etcd":"http://127.0.0.1:PORT"}
//
// It reads commands, one a line, on standard input: `compact` compacts etcd at its current
// revision and answers {"compacted":REV} on stdout, so tests can provoke 410 Gone without
// waiting for kube-apiserver's own compaction interval. It stops, removing DIR, when its
// standard input closes (its parent dropped it or died); if kube-apiserver itself fails, it
// exits non-zero and leaves DIR for reading. Everything binds 127.0.0.1.
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "time/tzdata" // CronJob time zones, as kube-apiserver's own main

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// extraArgs collects repeated --apiserver-arg flags.
type extraArgs []string

func (e *extraArgs) String() string     { return strings.Join(*e, " ") }
func (e *extraArgs) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	dir := flag.String("dir", "", "data directory (created; removed on exit)")
	featureGates := flag.String("feature-gates", "", "kube-apiserver --feature-gates")
	compaction := flag.Duration("etcd-compaction-interval", 5*time.Minute, "kube-apiserver --etcd-compaction-interval")
	watchCache := flag.Bool("watch-cache", true, "kube-apiserver --watch-cache")
	verbosity := flag.Int("v", 0, "kube-apiserver log verbosity")
	var extra extraArgs
	flag.Var(&extra, "apiserver-arg", "one more kube-apiserver argument (repeatable)")
	flag.Parse()
	if *dir == "" {
		fail(errors.New("--dir is required"))
	}
	if err := run(*dir, *featureGates, *compaction, *watchCache, *verbosity, extra); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "informer-envtest-launcher: %v\n", err)
	os.Exit(2)
}

func run(dir, featureGates string, compaction time.Duration, watchCache bool, verbosity int, extra []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var cleanup sync.Once
	stop := func(code int) {
		cleanup.Do(func() {
			// A failed server keeps its directory (and the log the parent put there) for reading.
			if code == 0 {
				_ = os.RemoveAll(dir)
			}
			os.Exit(code)
		})
	}

	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	if err := writePKI(pki); err != nil {
		return fmt.Errorf("writing certificates: %w", err)
	}
	token, err := randomHex(24)
	if err != nil {
		return err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	line := fmt.Sprintf("%s,envtest-admin,envtest-admin,\"system:masters\"\n", token)
	if err := os.WriteFile(tokens, []byte(line), 0o600); err != nil {
		return err
	}

	etcd, etcdURL, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	// The parent holds our stdin: when it closes, nobody can use these servers any more.
	go serveCommands(etcd, func() { stop(0) })
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// No kubernetes Service endpoints: a loopback address may not be advertised in them.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", port),
		"--etcd-servers=" + etcdURL,
		"--etcd-compaction-interval=" + compaction.String(),
		fmt.Sprintf("--watch-cache=%t", watchCache),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + filepath.Join(pki, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "serving.key"),
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://127.0.0.1",
		"--service-account-key-file=" + filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		fmt.Sprintf("--v=%d", verbosity),
	}
	if featureGates != "" {
		args = append(args, "--feature-gates="+featureGates)
	}
	args = append(args, extra...)

	ready := map[string]string{
		"server":  fmt.Sprintf("https://127.0.0.1:%d", port),
		"ca_file": filepath.Join(pki, "ca.crt"),
		"token":   token,
		"etcd":    etcdURL,
	}
	out, err := json.Marshal(ready)
	if err != nil {
		return err
	}
	// The parent waits for /readyz itself; this line says where to look.
	fmt.Println(string(out))

	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(args)
	code := cli.Run(cmd)
	stop(code)
	return nil
}

// serveCommands answers the commands read from stdin until it closes, then calls done.
func serveCommands(etcd *embed.Etcd, done func()) {
	var mu sync.Mutex
	reply := func(v any) {
		out, err := json.Marshal(v)
		if err != nil {
			out = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(string(out))
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		switch cmd := strings.TrimSpace(lines.Text()); cmd {
		case "compact":
			rev := etcd.Server.KV().Rev()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := etcd.Server.Compact(ctx, &etcdserverpb.CompactionRequest{Revision: rev, Physical: true})
			cancel()
			if err != nil {
				reply(map[string]string{"error": err.Error()})
			} else {
				reply(map[string]int64{"compacted": rev})
			}
		case "":
		default:
			reply(map[string]string{"error": "unknown command " + cmd})
		}
	}
	done()
}

// startEtcd starts an embedded etcd with its data in dir and returns it and its client URL.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peer.String())
	// Unsafe but fast: the data is thrown away with the process.
	cfg.UnsafeNoFsync = true
	// Room for benchmarks that seed tens of thousands of realistic Pods (etcd's default quota is
	// 2 GiB, and its database file keeps every revision until compaction).
	cfg.QuotaBackendBytes = 8 << 30
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", errors.New("etcd did not become ready in 60 s")
	}
	go func() {
		if err, ok := <-e.Err(); ok && err != nil {
			fmt.Fprintf(os.Stderr, "informer-envtest-launcher: etcd: %v\n", err)
		}
	}()
	return e, client.String(), nil
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writePKI writes a CA (ca.crt), a serving certificate for 127.0.0.1 and localhost signed by
// it (serving.crt, serving.key) and a service-account key pair (sa.key, sa.pub).
func writePKI(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "informer-envtest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	servingTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTemplate, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	servingKeyDER, err := x509.MarshalECPrivateKey(servingKey)
	if err != nil {
		return err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files := []struct {
		name, kind string
		der        []byte
	}{
		{"ca.crt", "CERTIFICATE", caDER},
		{"serving.crt", "CERTIFICATE", servingDER},
		{"serving.key", "EC PRIVATE KEY", servingKeyDER},
		{"sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
		{"sa.pub", "PUBLIC KEY", saPubDER},
	}
	for _, f := range files {
		data := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
