// Command testcluster is a multi-call binary for the project's test control plane.
//
// It dispatches on the basename of argv[0] or, failing that, on its first argument:
//
//	etcd                      an embedded etcd 3.6 server (see runEtcd for its flags)
//	etcd-compact ENDPOINT     compacts etcd at its current revision and prints that revision
//	kube-apiserver            k8s.io/kubernetes/cmd/kube-apiserver
//	kube-controller-manager   k8s.io/kubernetes/cmd/kube-controller-manager
//	kube-scheduler            k8s.io/kubernetes/cmd/kube-scheduler
//	kubelet                   k8s.io/kubernetes/cmd/kubelet (the real node)
//	kube-proxy                k8s.io/kubernetes/cmd/kube-proxy (the real node, nftables mode)
//
// Run each component as its own process: they share global logging, metrics and feature-gate state.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/component-base/logs/json/register"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

const usage = `usage: testcluster COMMAND [ARGS...]
commands: etcd, etcd-compact ENDPOINT, kube-apiserver, kube-controller-manager, kube-scheduler,
kubelet, kube-proxy`

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if !isCommand(name) {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	// The cobra commands parse os.Args[1:]; drop the dispatch word when it was an argument.
	os.Args = append([]string{name}, args...)

	switch name {
	case "etcd":
		os.Exit(runEtcd(args))
	case "etcd-compact":
		os.Exit(runEtcdCompact(args))
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	case "kube-proxy":
		os.Exit(cli.Run(proxy.NewProxyCommand()))
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n%s\n", name, usage)
		os.Exit(2)
	}
}

func isCommand(name string) bool {
	switch name {
	case "etcd", "etcd-compact", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
		"kubelet", "kube-proxy":
		return true
	}
	return false
}

// runEtcd starts a single-member etcd on loopback, tuned for tests (no fsync), and runs until
// SIGINT or SIGTERM.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "directory for etcd's data (required)")
	clientURL := fs.String("listen-client-url", "http://127.0.0.1:2379", "client URL to listen on and advertise")
	peerURL := fs.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL to listen on and advertise")
	logLevel := fs.String("log-level", "warn", "etcd log level")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: bad --listen-client-url: %v\n", err)
		return 2
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: bad --listen-peer-url: %v\n", err)
		return 2
	}

	cfg := embed.NewConfig()
	cfg.Name = "pando-test"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = *logLevel
	cfg.Logger = "zap"
	// Compaction is left to explicit `etcd-compact` calls (and the API server's own schedule),
	// so that tests which need a 410 Gone get one deterministically.

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		return 1
	}
	defer e.Close()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd: ready, serving clients on %s\n", cu)
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		return 1
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v before ready, stopping\n", s)
		return 1
	}
	select {
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v, stopping\n", s)
		return 0
	}
}

// runEtcdCompact compacts the etcd at ENDPOINT at its current revision (physically, so that the
// API server's next watch from an older resourceVersion gets 410 Gone) and prints the revision.
func runEtcdCompact(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: etcd-compact ENDPOINT   (e.g. http://127.0.0.1:2379)")
		return 2
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{args[0]}, DialTimeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-compact: connect %s: %v\n", args[0], err)
		return 1
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "compact-probe", clientv3.WithCountOnly())
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-compact: read revision: %v\n", err)
		return 1
	}
	rev := resp.Header.Revision
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		fmt.Fprintf(os.Stderr, "etcd-compact: compact at %d: %v\n", rev, err)
		return 1
	}
	fmt.Println(rev)
	return 0
}
