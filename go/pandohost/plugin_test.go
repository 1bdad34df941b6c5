package pandohost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pandohost"
	"pandohost/api"
)

// startBoth starts one pando-host serve with two adapters: the Kubernetes
// adapter as "cluster" and the test adapter (kind test, whose apply of
// plan `sleep-<ms>` sleeps that long on the host's timer) as "sleeper".
func startBoth(t *testing.T) *pandohost.Plugin {
	t.Helper()
	kube := env(t)
	sleeper := os.Getenv("PANDOHOST_TEST_SLEEPER")
	if sleeper == "" {
		t.Skip("PANDOHOST_TEST_SLEEPER is not set (scripts/test sets it to the test adapter component)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := pandohost.Start(ctx, pandohost.PluginConfig{
		PandoHost: kube.PandoHost,
		CacheDir:  kube.CacheDir,
		Adapters: map[string]pandohost.Config{
			"cluster": kube,
			"sleeper": {Component: sleeper},
		},
	})
	if err != nil {
		t.Fatalf("starting the plugin with two adapters: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func adapter(t *testing.T, p *pandohost.Plugin, name string) *pandohost.Adapter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := p.Adapter(ctx, name)
	if err != nil {
		t.Fatalf("adapter %q: %v", name, err)
	}
	return a
}

func TestOneServeServesSeveralAdaptersByName(t *testing.T) {
	p := startBoth(t)
	cluster, sleeper := adapter(t, p, "cluster"), adapter(t, p, "sleeper")
	if cluster.Kind() != "kubernetes" || sleeper.Kind() != "test" {
		t.Fatalf("kinds %q and %q; want kubernetes and test: each name reaches its own adapter",
			cluster.Kind(), sleeper.Kind())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.HealthCheck(ctx); err != nil {
		t.Fatalf("the Kubernetes adapter's health check through the shared plugin: %v", err)
	}
	h, err := sleeper.Apply(ctx, sleepPlan("sleep-1"))
	if err != nil || h.ID != "sleep-1" {
		t.Fatalf("the test adapter's apply: %+v, %v", h, err)
	}
	if _, err := p.Adapter(ctx, "nobody"); err == nil {
		t.Fatal("a name not in PluginConfig.Adapters should be refused")
	}
}

func sleepPlan(id string) api.BundlePlan {
	return api.BundlePlan{
		ID: id, Revision: "1",
		Network: api.NetworkRules{Egress: api.EgressPolicy{Kind: api.EgressPolicyNone}},
	}
}

// Calls from many goroutines are served at once (an instance each from the
// host's pool), not one after another: eight calls that each sleep 800 ms
// on the host's timer would take at least 6.4 s one at a time, so ending
// sooner than that is only possible if they overlapped. The bound is that
// logical one, not a performance target.
func TestConcurrentCallsAreServedConcurrently(t *testing.T) {
	p := startBoth(t)
	sleeper := adapter(t, p, "sleeper")
	const calls, each = 8, 800 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// One call first, so that the pool's first instance and the
	// connection are made outside the measured part.
	if _, err := sleeper.Apply(ctx, sleepPlan("sleep-1")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	started := time.Now()
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("sleep-%d", each.Milliseconds())
			h, err := sleeper.Apply(ctx, sleepPlan(id))
			if err == nil && h.ID != id {
				err = fmt.Errorf("call %d answered %q", i, h.ID)
			}
			errs <- err
		}()
	}
	wg.Wait()
	took := time.Since(started)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if serial := calls * each; took >= serial {
		t.Fatalf("%d calls of %v took %v, no less than one after another (%v): they were not "+
			"served concurrently", calls, each, took, serial)
	}
	t.Logf("%d calls of %v each took %v together", calls, each, took)
}

// Unary calls go on call channels (calls.go) and mean there what they mean
// on gRPC: an adapter's error arrives as the contract's, and a call
// cancelled from Go is cancelled in the host. The adapter has one instance
// (max_instances 1): a call after the cancelled five-second sleep is
// answered before that sleep would have ended only if the cancel reached
// the instance and freed it.
func TestUnaryCallsGoOnCallChannelsAndACancelReachesTheHost(t *testing.T) {
	kube := env(t)
	sleeper := os.Getenv("PANDOHOST_TEST_SLEEPER")
	if sleeper == "" {
		t.Skip("PANDOHOST_TEST_SLEEPER is not set (scripts/test sets it to the test adapter component)")
	}
	limits := filepath.Join(t.TempDir(), "limits.json")
	if err := os.WriteFile(limits, []byte(`{"max_instances": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := pandohost.Config{PandoHost: kube.PandoHost, CacheDir: kube.CacheDir, Component: sleeper, Limits: limits}
	a := load(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	before := pandohost.CallsOnChannelsForTest(a)
	for range 5 {
		if _, err := a.Apply(ctx, sleepPlan("sleep-1")); err != nil {
			t.Fatal(err)
		}
	}
	if got := pandohost.CallsOnChannelsForTest(a) - before; got != 5 {
		t.Fatalf("%d of 5 calls in a row were answered on a call channel; want all", got)
	}

	_, err := a.Apply(ctx, sleepPlan("log-flood-x"))
	if !pandohost.IsKind(err, api.ErrorInvalid) || !strings.Contains(err.Error(), "log-flood-<lines>") {
		t.Fatalf("an invalid plan on a call channel: %v; want the adapter's invalid error", err)
	}

	cctx, cancelCall := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancelCall)
	started := time.Now()
	if _, err := a.Apply(cctx, sleepPlan("sleep-5000")); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call cancelled from Go: %v; want context.Canceled", err)
	}
	if _, err := a.Apply(ctx, sleepPlan("sleep-1")); err != nil {
		t.Fatalf("the call after a cancelled one: %v", err)
	}
	if took := time.Since(started); took >= 5*time.Second {
		t.Fatalf("the call after the cancelled one ended %v after it began: it waited for the "+
			"only instance to finish its sleep, so the cancel did not reach the host", took)
	}

	cfg.NoCallChannels = true
	b := load(t, cfg)
	if _, err := b.Apply(ctx, sleepPlan("sleep-1")); err != nil {
		t.Fatal(err)
	}
	if n := pandohost.CallsOnChannelsForTest(b); n != 0 {
		t.Fatalf("%d calls went on call channels with NoCallChannels set", n)
	}
}
