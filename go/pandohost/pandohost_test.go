package pandohost_test

// These tests start `pando-host serve` through go-plugin's real client and
// drive the Kubernetes adapter against the project's test cluster, on its
// real node (containerd, CNI, enforced NetworkPolicy). scripts/test runs
// them inside the cluster's network namespace with the paths below set;
// without them each test skips, saying which is missing.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pandohost"
	"pandohost/api"
)

// env names what a test needs: the binary and the files the other verbs
// take (scripts/test sets them from the repository's own).
func env(t *testing.T) pandohost.Config {
	t.Helper()
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			t.Skipf("%s is not set: run these through scripts/test, which builds pando-host and "+
				"starts the test cluster (docs/go.md, \"Tests\")", name)
		}
		return v
	}
	return pandohost.Config{
		PandoHost:  get("PANDOHOST_TEST_BIN"),
		Component:  get("PANDOHOST_TEST_COMPONENT"),
		Grants:     get("PANDOHOST_TEST_GRANTS"),
		Config:     get("PANDOHOST_TEST_CONFIG"),
		Kubeconfig: get("PANDOHOST_TEST_KUBECONFIG"),
		CacheDir:   filepath.Join(t.TempDir(), "cache"),
	}
}

func load(t *testing.T, cfg pandohost.Config) *pandohost.Adapter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := pandohost.Load(ctx, cfg)
	if err != nil {
		t.Fatalf("loading the adapter: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func nonce(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func TestTheAdapterLoadsAndSaysWhoItIs(t *testing.T) {
	a := load(t, env(t))
	if a.Kind() != "kubernetes" || a.Category() != api.CategoryCluster {
		t.Fatalf("kind %q, category %q; want kubernetes, cluster", a.Kind(), a.Category())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	caps, err := a.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !caps.Exec || !caps.Logs || !caps.VolumeSnapshot {
		t.Fatalf("capabilities %+v: the Kubernetes adapter execs, logs and snapshots", caps)
	}
}

func TestABadComponentIsRefusedWithTheHostsWords(t *testing.T) {
	cfg := env(t)
	bad := filepath.Join(t.TempDir(), "not-a-component.wasm")
	if err := os.WriteFile(bad, []byte("this is not wasm"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Component = bad
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := pandohost.Load(ctx, cfg)
	var pe *pandohost.PluginError
	if !errors.As(err, &pe) {
		t.Fatalf("want a *PluginError, got %T: %v", err, err)
	}
	if !strings.Contains(pe.Stderr, "not-a-component.wasm") {
		t.Fatalf("the host's words should name the component; stderr: %q", pe.Stderr)
	}
}

func TestAWrongContractVersionIsRefusedByName(t *testing.T) {
	cfg := env(t)
	wrong := os.Getenv("PANDOHOST_TEST_WRONG_VERSION")
	if wrong == "" {
		t.Skip("PANDOHOST_TEST_WRONG_VERSION is not set (scripts/test sets it to the wrong-version test component)")
	}
	cfg.Component = wrong
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := pandohost.Load(ctx, cfg)
	var pe *pandohost.PluginError
	if !errors.As(err, &pe) || !strings.Contains(pe.Stderr, "pando:runtime") {
		t.Fatalf("want the host's refusal naming the contract version; got %v", err)
	}
}

func TestServeByHandSaysWhatItIsFor(t *testing.T) {
	cfg := env(t)
	out, err := runHost(cfg.PandoHost, "serve", "--adapter", cfg.Component)
	if err == nil {
		t.Fatalf("pando-host serve ran outside a plugin host: %s", out)
	}
	if !strings.Contains(out, "hashicorp/go-plugin") {
		t.Fatalf("it should say it is a go-plugin plugin; said: %s", out)
	}
}

func TestAnAppThroughItsWholeLife(t *testing.T) {
	a := load(t, env(t))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	id := "go-" + nonce(t)[:8]
	word := nonce(t)

	events := make(chan api.BundleEvent, 1024)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- a.WatchBundles(watchCtx, func(e api.BundleEvent) { events <- e }) }()
	waitFor(t, events, "the watch established", func(e api.BundleEvent) bool {
		return e.Kind == api.BundleEventWatching
	})

	plan := api.BundlePlan{
		ID:       id,
		Revision: "1",
		Workloads: []api.WorkloadSpec{{
			Name:    "app",
			Image:   "pando.test/busybox:1",
			Command: []string{"sh", "-c", "echo started-" + word + "; exec sleep 3600"},
			Resources: api.ResourceRequirements{
				Requests: api.Resources{CPUMillis: 50, MemoryBytes: 32 << 20},
			},
			Mounts: []api.VolumeMount{{Volume: "data", Path: "/data"}},
		}},
		Volumes: []api.VolumeSpec{{Name: "data"}},
		Network: api.NetworkRules{Egress: api.EgressPolicy{Kind: api.EgressPolicyNone}},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = a.Destroy(ctx, api.BundleRef{ID: id}, api.DestroyOptions{KeepVolumes: false})
	})
	handle, err := a.Apply(ctx, plan)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if handle.ID != id || handle.Location == "" {
		t.Fatalf("apply's handle %+v", handle)
	}

	// Observe until running; the watch must have seen it too.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		o, err := a.Observe(ctx, api.BundleRef{ID: id})
		if err != nil {
			t.Fatalf("observe: %v", err)
		}
		if len(o.Workloads) == 1 && o.Workloads[0].Phase == api.WorkloadPhaseRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not running after 3 minutes: %+v", o)
		}
		time.Sleep(time.Second)
	}
	waitFor(t, events, "the watch reporting the workload running", func(e api.BundleEvent) bool {
		return e.Kind == api.BundleEventChanged && e.Changed.Bundle == id &&
			e.Changed.Workload.Phase == api.WorkloadPhaseRunning
	})

	ref := api.WorkloadRef{Bundle: id, Workload: "app"}
	logHolds(t, ctx, a, ref, "started-"+word, "logs")

	// exec with stdin: what goes in comes back.
	session, err := a.Exec(ctx, ref, api.ExecRequest{Command: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(session.Stdout()); got <- b }()
	go func() { _, _ = io.Copy(io.Discard, session.Stderr()) }()
	if _, err := session.Stdin().Write([]byte("through-stdin-" + word)); err != nil {
		t.Fatalf("exec stdin: %v", err)
	}
	_ = session.Stdin().Close()
	code, err := session.Wait(ctx)
	if err != nil || code != 0 {
		t.Fatalf("exec wait: %d, %v", code, err)
	}
	if b := <-got; string(b) != "through-stdin-"+word {
		t.Fatalf("exec's stdout %q: want what stdin took", b)
	}

	// run: stdout to the caller, a failure's stderr in the error.
	var out bytes.Buffer
	err = a.Run(ctx, ref, api.RunRequest{Command: []string{"sh", "-c", "printf %s " + word + " > /data/file; cat /data/file"}, Stdout: &out})
	if err != nil || out.String() != word {
		t.Fatalf("run: %q, %v", out.String(), err)
	}
	err = a.Run(ctx, ref, api.RunRequest{Command: []string{"sh", "-c", "echo broken-" + word + " >&2; exit 3"}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.ErrorCommandFailed || ae.CommandFailed == nil ||
		ae.CommandFailed.ExitCode != 3 || !strings.Contains(ae.CommandFailed.Stderr, "broken-"+word) {
		t.Fatalf("a failing command: want command-failed with exit 3 and its stderr, got %v", err)
	}

	// snapshot, change, restore: the bytes come back.
	vol := api.VolumeHandle{Bundle: id, Name: "data"}
	var archive bytes.Buffer
	if err := a.SnapshotVolume(ctx, vol, &archive); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if archive.Len() == 0 {
		t.Fatal("the snapshot is empty")
	}
	// The bytes above came on byte channels; the same bytes come as gRPC
	// chunks from a plugin told not to use them.
	if n := pandohost.ByteChannelsForTest(a); n != 4 {
		t.Fatalf("%d byte channels connected for a log, 2 runs and a snapshot: want 4", n)
	}
	chunked := bytesTheSameAsChunks(t, ctx, ref, vol, word, archive.Len())
	if err := a.Run(ctx, ref, api.RunRequest{Command: []string{"sh", "-c", "echo changed > /data/file"}}); err != nil {
		t.Fatalf("changing the volume: %v", err)
	}
	var changed bytes.Buffer
	if err := chunked.SnapshotVolume(ctx, vol, &changed); err != nil {
		t.Fatalf("snapshot of the changed volume, as chunks: %v", err)
	}
	if err := a.Stop(ctx, api.BundleRef{ID: id}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := a.RestoreVolume(ctx, vol, bytes.NewReader(archive.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	var again bytes.Buffer
	if err := a.SnapshotVolume(ctx, vol, &again); err != nil {
		t.Fatalf("snapshot after restore: %v", err)
	}
	if !bytes.Contains(again.Bytes(), []byte(word)) || bytes.Contains(again.Bytes(), []byte("changed")) {
		t.Fatal("the restored volume does not hold what the snapshot did")
	}
	if n := pandohost.ByteChannelsForTest(a); n != 7 {
		t.Fatalf("%d byte channels connected, with the change's run, a restore and a snapshot: want 7", n)
	}
	// A restore whose archive fails half-way changes nothing: the call is
	// cancelled before its byte channel closes, so the server never takes
	// the short archive for a whole one.
	half := io.MultiReader(bytes.NewReader(changed.Bytes()[:changed.Len()/2]), failingReader{})
	if err := a.RestoreVolume(ctx, vol, half); err == nil || !strings.Contains(err.Error(), "reading the archive") {
		t.Fatalf("a restore from an archive that failed half-way: want its read error, got %v", err)
	}
	again.Reset()
	if err := a.SnapshotVolume(ctx, vol, &again); err != nil {
		t.Fatalf("snapshot after the failed restore: %v", err)
	}
	if !bytes.Contains(again.Bytes(), []byte(word)) || bytes.Contains(again.Bytes(), []byte("changed")) {
		t.Fatal("a restore that failed half-way changed the volume")
	}
	// The restore as chunks: back to the changed volume.
	if err := chunked.RestoreVolume(ctx, vol, bytes.NewReader(changed.Bytes())); err != nil {
		t.Fatalf("restore as chunks: %v", err)
	}
	again.Reset()
	if err := a.SnapshotVolume(ctx, vol, &again); err != nil {
		t.Fatalf("snapshot after the restore as chunks: %v", err)
	}
	if !bytes.Contains(again.Bytes(), []byte("changed")) || bytes.Contains(again.Bytes(), []byte(word)) {
		t.Fatal("the volume restored as chunks does not hold what that snapshot did")
	}

	if err := a.Destroy(ctx, api.BundleRef{ID: id}, api.DestroyOptions{KeepVolumes: false}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	stopWatch()
	if err := <-watched; err != nil {
		t.Fatalf("the watch, cancelled, should return nil: %v", err)
	}
}

// logHolds reads the workload's whole log and fails the test unless it
// holds line.
func logHolds(t *testing.T, ctx context.Context, a *pandohost.Adapter, ref api.WorkloadRef, line, what string) {
	t.Helper()
	logs, err := a.Logs(ctx, ref, api.LogOptions{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	text, err := io.ReadAll(logs)
	_ = logs.Close()
	if err != nil || !strings.Contains(string(text), line) {
		t.Fatalf("%s %q (%v): want the workload's own line", what, text, err)
	}
}

// failingReader fails every read, as a cut upload would.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("the upload was cut") }

// bytesTheSameAsChunks reads the log, a run's stdout and the volume's
// snapshot through a plugin with byte channels off: what the channels
// carried, as chunks. That plugin's adapter, for more.
func bytesTheSameAsChunks(t *testing.T, ctx context.Context, ref api.WorkloadRef, vol api.VolumeHandle, word string, snapshotLen int) *pandohost.Adapter {
	t.Helper()
	cfg := env(t)
	cfg.NoByteChannels = true
	a := load(t, cfg)
	logHolds(t, ctx, a, ref, "started-"+word, "logs as chunks")
	var out bytes.Buffer
	err := a.Run(ctx, ref, api.RunRequest{Command: []string{"cat", "/data/file"}, Stdout: &out})
	if err != nil || out.String() != word {
		t.Fatalf("run as chunks: %q, %v", out.String(), err)
	}
	var archive bytes.Buffer
	if err := a.SnapshotVolume(ctx, vol, &archive); err != nil {
		t.Fatalf("snapshot as chunks: %v", err)
	}
	if archive.Len() != snapshotLen || !bytes.Contains(archive.Bytes(), []byte(word)) {
		t.Fatalf("the snapshot as chunks: %d bytes, want %d holding the volume's file", archive.Len(), snapshotLen)
	}
	if n := pandohost.ByteChannelsForTest(a); n != 0 {
		t.Fatalf("%d byte channels connected with NoByteChannels set", n)
	}
	return a
}

func TestNotFoundArrivesAsTheContractsError(t *testing.T) {
	a := load(t, env(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := a.Logs(ctx, api.WorkloadRef{Bundle: "go-absent-" + nonce(t)[:6], Workload: "app"}, api.LogOptions{})
	if !pandohost.IsKind(err, api.ErrorNotFound) {
		t.Fatalf("logs of an app that does not exist: want not-found, got %T %v", err, err)
	}
}

func TestTheNextCallStartsThePluginAgainAfterItDied(t *testing.T) {
	a := load(t, env(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A watch is a call in flight; the process is killed under it.
	watched := make(chan error, 1)
	ready := make(chan struct{}, 1)
	go func() {
		watched <- a.WatchBundles(ctx, func(e api.BundleEvent) {
			if e.Kind == api.BundleEventWatching {
				ready <- struct{}{}
			}
		})
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the watch never started")
	}
	if err := pandohost.KillPluginForTest(a); err != nil {
		t.Fatal(err)
	}
	err := <-watched
	var pe *pandohost.PluginError
	if !errors.As(err, &pe) {
		t.Fatalf("the call in flight when the plugin died: want a *PluginError, got %T %v", err, err)
	}
	if err := a.HealthCheck(ctx); err != nil {
		t.Fatalf("the next call should start the plugin again: %v", err)
	}
}

func runHost(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func waitFor(t *testing.T, events <-chan api.BundleEvent, what string, ok func(api.BundleEvent) bool) {
	t.Helper()
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case e := <-events:
			if ok(e) {
				return
			}
		case <-timeout:
			t.Fatalf("no event: %s", what)
		}
	}
}

func TestATrialCancelledFromGoLeavesNoNamespace(t *testing.T) {
	a := load(t, env(t))
	k := newKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	app := "go-trial-" + nonce(t)[:6]
	trialCtx, cancelTrial := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() {
		_, err := a.Trial(trialCtx, api.TrialRequest{
			Bundle: app,
			Workload: api.WorkloadSpec{
				Name: "web", Image: "pando.test/busybox:1",
				Command:   []string{"sh", "-c", "exec sleep 3600"},
				Resources: api.ResourceRequirements{Requests: api.Resources{CPUMillis: 50, MemoryBytes: 32 << 20}},
			},
			Network:    api.NetworkRules{Egress: api.EgressPolicy{Kind: api.EgressPolicyNone}},
			DurationMs: 120_000,
		})
		ended <- err
	}()
	// The trial's pod running in its own namespace, seen by the admin.
	var ns string
	for ns == "" {
		items, err := k.namespaces(ctx, "pando.dev/trial="+app)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == 1 {
			if phase, err := k.podPhase(ctx, items[0].Metadata.Name, "web"); err == nil && phase == "Running" {
				ns = items[0].Metadata.Name
			}
		}
		select {
		case err := <-ended:
			t.Fatalf("the trial ended before it was cancelled: %v", err)
		case <-ctx.Done():
			t.Fatal("no trial pod ran")
		case <-time.After(200 * time.Millisecond):
		}
	}
	cancelTrial()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("a trial cancelled from Go returns the context's error; got %v", err)
	}
	// The host cancelled the call in the adapter, which removes its namespace.
	deadline := time.Now().Add(30 * time.Second)
	for {
		gone, err := k.namespaceGone(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled trial's namespace %s is still there after 30 s", ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestARequestTheGrantsRefuseArrivesAsDeniedNamingTheGrant(t *testing.T) {
	cfg := env(t)
	full := load(t, cfg)
	text, err := os.ReadFile(cfg.Grants)
	if err != nil {
		t.Fatal(err)
	}
	// The shipped grants without the rule that lets the adapter bind its
	// role in an app's namespace, which every first apply does.
	rule := "  - verbs: [get, list, create, delete]\n    resources: [rbac.authorization.k8s.io/rolebindings]\n    namespaces: [\"pando-*\"]\n    except: [pando-system]\n"
	narrowed := strings.Replace(string(text), rule, "", 1)
	if narrowed == string(text) {
		t.Fatalf("%s no longer has the rolebindings rule this test removes", cfg.Grants)
	}
	cfg.Grants = filepath.Join(t.TempDir(), "grants.yaml")
	if err := os.WriteFile(cfg.Grants, []byte(narrowed), 0o600); err != nil {
		t.Fatal(err)
	}
	a := load(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "go-denied-" + nonce(t)[:6]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = full.Destroy(ctx, api.BundleRef{ID: id}, api.DestroyOptions{KeepVolumes: false})
	})
	_, err = a.Apply(ctx, api.BundlePlan{
		ID: id, Revision: "1",
		Network: api.NetworkRules{Egress: api.EgressPolicy{Kind: api.EgressPolicyNone}},
	})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.ErrorDenied || !strings.Contains(ae.Message, "rolebindings") {
		t.Fatalf("want denied naming rolebindings, got %T %v", err, err)
	}
}

// A workload's Security (contract 0.2.0) crosses the wire: the Kubernetes
// adapter of 0.1.0 cannot carry it, so the host refuses the plan as
// unsupported, naming the workload and the contract, before the adapter
// sees it. Were the field dropped on the way, the plan would apply.
func TestSecurityCrossesTheWireAndA01AdapterIsRefusedIt(t *testing.T) {
	a := load(t, env(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user := uint32(1000)
	id := "go-security-" + nonce(t)[:6]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = a.Destroy(ctx, api.BundleRef{ID: id}, api.DestroyOptions{KeepVolumes: false})
	})
	_, err := a.Apply(ctx, api.BundlePlan{
		ID: id, Revision: "1",
		Workloads: []api.WorkloadSpec{{
			Name:  "locked",
			Image: "pando.test/busybox:1",
			Resources: api.ResourceRequirements{
				Requests: api.Resources{CPUMillis: 10, MemoryBytes: 16 << 20},
			},
			Security: api.Security{RunAsUser: &user, Restricted: true},
		}},
		Network: api.NetworkRules{Egress: api.EgressPolicy{Kind: api.EgressPolicyNone}},
	})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.ErrorUnsupported ||
		!strings.Contains(ae.Message, "`locked`") || !strings.Contains(ae.Message, "pando:runtime@0.1.0") {
		t.Fatalf("want unsupported naming the workload and 0.1.0, got %T %v", err, err)
	}
}
