package pandohost

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"pandohost/api"
	"pandohost/internal/pb"
)

// Handshake is what pando-host serve expects of its go-plugin client: the
// magic cookie is a guard against running the binary as a plugin by hand,
// not a secret. ProtocolVersion 1 is contract 0.1's service.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "PANDO_HOST_PLUGIN",
	MagicCookieValue: "9f6c0c5e-wasm-adapters-b1c8",
}

// Config says which adapter to load and how, as pando-host's flags do
// (docs/cli.md).
type Config struct {
	// PandoHost is the pando-host binary; empty is `pando-host` on PATH.
	PandoHost string
	// Component is the adapter's .wasm file.
	Component string
	// Digest, when set, is the SHA-256 the component must have.
	Digest string
	// Grants, Config and Limits are files (YAML or JSON): the adapter's
	// grants, its configuration, the host's limits for it.
	Grants, Config, Limits string
	// Kubeconfig and Context choose the cluster the Kubernetes import
	// reaches; empty is kubectl's search.
	Kubeconfig, Context string
	// CacheDir is the compile cache; empty is the host's default.
	CacheDir string
	// Env is added to the plugin's environment (RUST_LOG=info, say).
	Env []string
	// Logger receives go-plugin's and the plugin's logs; nil discards them.
	Logger hclog.Logger
	// StartTimeout bounds a start, compiling the component included (a
	// first compile takes seconds); zero is two minutes.
	StartTimeout time.Duration
}

func (c Config) args() []string {
	args := []string{"serve", "--adapter", c.Component}
	for _, f := range []struct{ flag, value string }{
		{"--digest", c.Digest}, {"--grants", c.Grants}, {"--config", c.Config},
		{"--limits", c.Limits}, {"--kubeconfig", c.Kubeconfig}, {"--context", c.Context},
		{"--cache-dir", c.CacheDir},
	} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	return args
}

// grpcPlugin is the adapter service's side of go-plugin: the client only.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pandohost loads adapters; it serves none")
}

func (grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return pb.NewAdapterClient(c), nil
}

// Load starts pando-host serve with the adapter and returns it once the
// adapter is loaded and answering. A component the host refuses (malformed,
// of a contract version it does not serve, granted what it may not have)
// is a *PluginError carrying the host's words.
func Load(ctx context.Context, cfg Config) (*Adapter, error) {
	a := &Adapter{cfg: cfg, stderr: newTail(16 << 10)}
	if _, err := a.conn(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// conn is the running plugin's client, starting the plugin when it is not
// running (the first call, or after it died).
func (a *Adapter) conn(ctx context.Context) (pb.AdapterClient, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client != nil && !a.client.Exited() {
		return a.rpc, nil
	}
	if a.closed {
		return nil, errors.New("pandohost: the adapter was closed")
	}
	if a.client != nil {
		a.client.Kill()
		a.client = nil
	}
	bin := a.cfg.PandoHost
	if bin == "" {
		bin = "pando-host"
	}
	cmd := exec.Command(bin, a.cfg.args()...)
	cmd.Env = append(os.Environ(), a.cfg.Env...)
	logger := a.cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	timeout := a.cfg.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	a.stderr.Reset()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          plugin.PluginSet{"adapter": grpcPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
		Stderr:           a.stderr,
		StartTimeout:     timeout,
	})
	protocol, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, &PluginError{Op: "starting " + bin + " serve", Err: err, Stderr: a.stderr.Tail()}
	}
	raw, err := protocol.Dispense("adapter")
	if err != nil {
		client.Kill()
		return nil, &PluginError{Op: "dispensing the adapter", Err: err, Stderr: a.stderr.Tail()}
	}
	rpc, ok := raw.(pb.AdapterClient)
	if !ok {
		client.Kill()
		return nil, &PluginError{Op: "dispensing the adapter", Err: errors.New("not an adapter client")}
	}
	info, err := rpc.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		client.Kill()
		return nil, &PluginError{Op: "reading the adapter's info", Err: err, Stderr: a.stderr.Tail()}
	}
	kind, err := fromPBKindInfo(info)
	if err != nil {
		client.Kill()
		return nil, &PluginError{Op: "reading the adapter's info", Err: err}
	}
	a.client, a.protocol, a.rpc, a.info = client, protocol, rpc, kind
	return rpc, nil
}

// dropIfDead forgets the plugin when it no longer answers its health
// check, so that the next call starts it again: go-plugin notices a dead
// process only once it has reaped it, which can be after the call that
// found the connection broken returned.
func (a *Adapter) dropIfDead() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil || a.protocol == nil {
		return
	}
	if a.client.Exited() || a.protocol.Ping() != nil {
		a.client.Kill()
		a.client, a.protocol, a.rpc = nil, nil, nil
	}
}

// Close stops the plugin process. Calls after it fail.
func (a *Adapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.client != nil {
		a.client.Kill()
		a.client = nil
	}
	return nil
}

// Info is who the adapter is, as the host read it at load.
func (a *Adapter) Info() api.KindInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.info
}

// Kind is the adapter's kind string.
func (a *Adapter) Kind() string { return a.Info().Kind }

// Category is what sort of runtime the adapter drives.
func (a *Adapter) Category() api.Category { return a.Info().Category }

// tail keeps the last bytes the plugin wrote to stderr, for errors.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = nil
}

// Tail is the last lines written, the host's `error:` line last when it
// failed.
func (t *tail) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
