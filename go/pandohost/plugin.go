package pandohost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

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
	// NoByteChannels sends snapshots, logs, run output, restores and
	// images as gRPC chunks rather than on a socket of their own beside
	// the call (channel.go).
	NoByteChannels bool
	// NoCallChannels sends every unary call on gRPC rather than on the
	// sockets held open beside it for them (calls.go).
	NoCallChannels bool
}

// PluginConfig is one pando-host serve process serving several adapters,
// each under its name: one engine and compile cache for all of them (one
// cluster each, or different runtimes).
type PluginConfig struct {
	// PandoHost is the pando-host binary; empty is `pando-host` on PATH.
	PandoHost string
	// Adapters are the adapters by name. Of each Config only what says
	// what to load is read (Component, Digest, Grants, Config, Limits,
	// Kubeconfig, Context); the process's settings are these.
	Adapters map[string]Config
	// CacheDir, Env, Logger, StartTimeout, NoByteChannels and
	// NoCallChannels are as in Config.
	CacheDir       string
	Env            []string
	Logger         hclog.Logger
	StartTimeout   time.Duration
	NoByteChannels bool
	NoCallChannels bool
}

func (c Config) plugin() PluginConfig {
	return PluginConfig{
		PandoHost: c.PandoHost, Adapters: map[string]Config{"": c}, CacheDir: c.CacheDir,
		Env: c.Env, Logger: c.Logger, StartTimeout: c.StartTimeout, NoByteChannels: c.NoByteChannels,
		NoCallChannels: c.NoCallChannels,
	}
}

// args is pando-host serve's command line: the flags for one unnamed
// adapter, else `--adapters FILE` with the file written into a directory
// of its own, which done removes (serve reads the file before its
// handshake, so it can go once the plugin is up or has failed).
func (c PluginConfig) args() (args []string, done func(), err error) {
	args = []string{"serve"}
	if c.CacheDir != "" {
		args = append(args, "--cache-dir", c.CacheDir)
	}
	if one, ok := c.Adapters[""]; ok && len(c.Adapters) == 1 {
		args = append(args, "--adapter", one.Component)
		for _, f := range []struct{ flag, value string }{
			{"--digest", one.Digest}, {"--grants", one.Grants}, {"--config", one.Config},
			{"--limits", one.Limits}, {"--kubeconfig", one.Kubeconfig}, {"--context", one.Context},
		} {
			if f.value != "" {
				args = append(args, f.flag, f.value)
			}
		}
		return args, func() {}, nil
	}
	type entry struct {
		Component  string `json:"component"`
		Digest     string `json:"digest,omitempty"`
		Grants     string `json:"grants,omitempty"`
		Config     string `json:"config,omitempty"`
		Limits     string `json:"limits,omitempty"`
		Kubeconfig string `json:"kubeconfig,omitempty"`
		Context    string `json:"context,omitempty"`
	}
	entries := map[string]entry{}
	for name, a := range c.Adapters {
		if name == "" {
			return nil, nil, errors.New("pandohost: with several adapters, each needs a name")
		}
		entries[name] = entry{absPath(a.Component), a.Digest, absPath(a.Grants), absPath(a.Config),
			absPath(a.Limits), absPath(a.Kubeconfig), a.Context}
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "pandohost-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	file := filepath.Join(dir, "adapters.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		done()
		return nil, nil, err
	}
	return append(args, "--adapters", file), done, nil
}

// absPath is p made absolute: the adapters file's relative paths would be
// read beside it, in its temporary directory.
func absPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if full, err := filepath.Abs(p); err == nil {
		return full
	}
	return p
}

// grpcPlugin is the adapter service's side of go-plugin: the client only.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pandohost loads adapters; it serves none")
}

// GRPCClient is the connection itself: Plugin.conn makes the client, with
// call channels beside it.
func (grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return c, nil
}

// Plugin is one pando-host serve process and the adapters it serves. Safe
// for concurrent use. If the process dies, the calls in flight fail with a
// *PluginError and the next call starts it again.
type Plugin struct {
	cfg    PluginConfig
	stderr *tail

	mu       sync.Mutex
	closed   bool
	client   *plugin.Client
	protocol plugin.ClientProtocol
	rpc      pb.AdapterClient
	// sockDir is the directory of the plugin's socket, where byte
	// channels are made.
	sockDir string
	// channelsUsed counts the byte channels the plugin connected.
	channelsUsed atomic.Int64
	// calls carries unary calls on call channels; nil when they are off.
	calls *callConn
	// callsOnChannels counts the calls answered on call channels.
	callsOnChannels atomic.Int64
}

// Start starts pando-host serve with the adapters and returns once all are
// loaded; Adapter picks one. A component the host refuses is a
// *PluginError carrying the host's words, naming the adapter.
func Start(ctx context.Context, cfg PluginConfig) (*Plugin, error) {
	if len(cfg.Adapters) == 0 {
		return nil, errors.New("pandohost: PluginConfig.Adapters is empty: name at least one adapter")
	}
	p := &Plugin{cfg: cfg, stderr: newTail(16 << 10)}
	if _, err := p.conn(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Adapter is the adapter loaded under name, which it reads the identity
// of. The adapter shares the plugin: closing it does not stop the plugin.
func (p *Plugin) Adapter(ctx context.Context, name string) (*Adapter, error) {
	if _, ok := p.cfg.Adapters[name]; !ok {
		return nil, fmt.Errorf("pandohost: no adapter named %q in this plugin's PluginConfig.Adapters", name)
	}
	a := &Adapter{p: p, name: name}
	if err := a.readInfo(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// Load starts pando-host serve with the adapter and returns it once the
// adapter is loaded and answering. A component the host refuses (malformed,
// of a contract version it does not serve, granted what it may not have)
// is a *PluginError carrying the host's words. Closing the adapter stops
// its plugin.
func Load(ctx context.Context, cfg Config) (*Adapter, error) {
	p, err := Start(ctx, cfg.plugin())
	if err != nil {
		return nil, err
	}
	a := &Adapter{p: p, owns: true}
	if err := a.readInfo(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return a, nil
}

func (a *Adapter) readInfo(ctx context.Context) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	info, err := rpc.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return &PluginError{Op: "reading the adapter's info", Err: err, Stderr: a.p.stderr.Tail()}
	}
	kind, err := fromPBKindInfo(info)
	if err != nil {
		return &PluginError{Op: "reading the adapter's info", Err: err}
	}
	a.info = kind
	return nil
}

// conn is the plugin's client and ctx carrying this adapter's name,
// starting the plugin when it is not running (the first call, or after it
// died).
func (a *Adapter) conn(ctx context.Context) (context.Context, pb.AdapterClient, error) {
	rpc, err := a.p.conn(ctx)
	if err != nil {
		return ctx, nil, err
	}
	if a.name != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "pando-adapter", a.name)
	}
	return ctx, rpc, nil
}

func (p *Plugin) conn(ctx context.Context) (pb.AdapterClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil && !p.client.Exited() {
		return p.rpc, nil
	}
	if p.closed {
		return nil, errors.New("pandohost: the plugin was closed")
	}
	if p.client != nil {
		p.calls.close()
		p.client.Kill()
		p.client = nil
	}
	bin := p.cfg.PandoHost
	if bin == "" {
		bin = "pando-host"
	}
	args, done, err := p.cfg.args()
	if err != nil {
		return nil, &PluginError{Op: "starting " + bin + " serve", Err: err}
	}
	defer done()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	logger := p.cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	timeout := p.cfg.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	p.stderr.Reset()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          plugin.PluginSet{"adapter": grpcPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
		Stderr:           p.stderr,
		StartTimeout:     timeout,
		// Fixed windows larger than a log or snapshot chunk (64 KiB):
		// grpc-go's default starts at 64 KiB and grows by estimate.
		GRPCDialOptions: []grpc.DialOption{
			grpc.WithInitialWindowSize(1 << 20),
			grpc.WithInitialConnWindowSize(4 << 20),
		},
	})
	protocol, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, &PluginError{Op: "starting " + bin + " serve", Err: err, Stderr: p.stderr.Tail()}
	}
	raw, err := protocol.Dispense("adapter")
	if err != nil {
		client.Kill()
		return nil, &PluginError{Op: "dispensing the adapter", Err: err, Stderr: p.stderr.Tail()}
	}
	cc, ok := raw.(*grpc.ClientConn)
	if !ok {
		client.Kill()
		return nil, &PluginError{Op: "dispensing the adapter", Err: errors.New("not a gRPC connection")}
	}
	p.sockDir = ""
	if rc := client.ReattachConfig(); rc != nil && rc.Addr != nil && rc.Addr.Network() == "unix" {
		p.sockDir = filepath.Dir(rc.Addr.String())
	}
	var conn grpc.ClientConnInterface = cc
	p.calls = nil
	if p.sockDir != "" && !p.cfg.NoCallChannels {
		p.calls = newCallConn(cc, p.sockDir, &p.callsOnChannels)
		p.calls.warm(ctx)
		conn = p.calls
	}
	rpc := pb.NewAdapterClient(conn)
	p.client, p.protocol, p.rpc = client, protocol, rpc
	return rpc, nil
}

// dropIfDead forgets the plugin when it no longer answers its health
// check, so that the next call starts it again: go-plugin notices a dead
// process only once it has reaped it, which can be after the call that
// found the connection broken returned.
func (p *Plugin) dropIfDead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil || p.protocol == nil {
		return
	}
	if p.client.Exited() || p.protocol.Ping() != nil {
		p.calls.close()
		p.client.Kill()
		p.client, p.protocol, p.rpc = nil, nil, nil
	}
}

// Ping checks that the plugin process answers (go-plugin's health check, a
// gRPC call that reaches no adapter), starting it if it is not running.
func (p *Plugin) Ping(ctx context.Context) error {
	if _, err := p.conn(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	protocol := p.protocol
	p.mu.Unlock()
	if protocol == nil {
		return &PluginError{Op: "ping", Err: errors.New("the plugin stopped")}
	}
	if err := protocol.Ping(); err != nil {
		p.dropIfDead()
		return &PluginError{Op: "ping", Err: err, Stderr: p.stderr.Tail()}
	}
	return nil
}

// Close stops the plugin process. Calls after it fail.
func (p *Plugin) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.calls.close()
	if p.client != nil {
		p.client.Kill()
		p.client = nil
	}
	return nil
}

// Close stops the plugin when the adapter was made by Load; an adapter of
// a Plugin leaves it running (Plugin.Close stops it).
func (a *Adapter) Close() error {
	if a.owns {
		return a.p.Close()
	}
	return nil
}

// Info is who the adapter is, as the host read it at load.
func (a *Adapter) Info() api.KindInfo { return a.info }

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
