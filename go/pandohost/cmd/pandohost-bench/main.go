// Command pandohost-bench is pando-bench's Go side (docs/benchmarks.md,
// "serve"): it loads adapters through package pandohost — go-plugin's
// client starting `pando-host serve` — as Pando's core does, and times the
// calls pando-bench asks for. One command a line on stdin, one JSON answer
// a line on stdout; only the calls are timed, so the pipe to pando-bench
// costs nothing that is measured.
//
//	pandohost-bench CONFIG.json
//
// CONFIG is {"pando_host": BIN, "cache_dir": DIR, "adapters": {NAME:
// {"component": …, "grants": …, "config": …, "kubeconfig": …}}}. Commands:
//
//	ping N                                 N health checks (gRPC, no adapter); {"ns": total}
//	upstream NAME BUNDLE WORKLOAD PORT N   N calls; {"ns": total, "answer": "host:port"}
//	apply NAME PLAN-ID N                   N calls; {"ns": total, "answer": location}
//	logs NAME BUNDLE WORKLOAD BYTES        one log read to its end; {"ns", "bytes"}
//	snapshot NAME BUNDLE VOLUME            one snapshot into a counter; {"ns", "bytes"}
//
// Each adapter is also served as NAME-grpc by a second plugin with byte and
// call channels off (pandohost.Config.NoByteChannels, NoCallChannels): its
// calls go on gRPC's HTTP/2 and its logs and snapshots come as gRPC chunks,
// the way they went before the channels.
//
// A failure is {"error": "…"}; end of input stops the plugin and exits.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"pandohost"
	"pandohost/api"
)

type config struct {
	PandoHost string `json:"pando_host"`
	CacheDir  string `json:"cache_dir"`
	Adapters  map[string]struct {
		Component  string `json:"component"`
		Grants     string `json:"grants"`
		Config     string `json:"config"`
		Kubeconfig string `json:"kubeconfig"`
	} `json:"adapters"`
}

type answer struct {
	Ns     int64  `json:"ns,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pandohost-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: pandohost-bench CONFIG.json")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		return err
	}
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", os.Args[1], err)
	}
	pc := pandohost.PluginConfig{PandoHost: cfg.PandoHost, CacheDir: cfg.CacheDir,
		Adapters: map[string]pandohost.Config{}}
	for name, a := range cfg.Adapters {
		pc.Adapters[name] = pandohost.Config{Component: a.Component, Grants: a.Grants,
			Config: a.Config, Kubeconfig: a.Kubeconfig}
	}
	ctx := context.Background()
	start, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	plugin, err := pandohost.Start(start, pc)
	if err != nil {
		return err
	}
	defer plugin.Close()
	pc.NoByteChannels, pc.NoCallChannels = true, true
	grpcOnly, err := pandohost.Start(start, pc)
	if err != nil {
		return err
	}
	defer grpcOnly.Close()
	adapters := map[string]*pandohost.Adapter{}
	for name := range cfg.Adapters {
		if adapters[name], err = plugin.Adapter(start, name); err != nil {
			return err
		}
		if adapters[name+"-grpc"], err = grpcOnly.Adapter(start, name); err != nil {
			return err
		}
	}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		a := command(ctx, plugin, adapters, strings.Fields(in.Text()))
		if err := out.Encode(a); err != nil {
			return err
		}
	}
	return in.Err()
}

func command(ctx context.Context, plugin *pandohost.Plugin, adapters map[string]*pandohost.Adapter, f []string) answer {
	fail := func(err error) answer { return answer{Error: err.Error()} }
	num := func(s string) int64 {
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	if len(f) < 2 {
		return fail(fmt.Errorf("a command and an adapter name, please: %q", f))
	}
	if f[0] == "ping" && len(f) == 2 {
		n := num(f[1])
		t := time.Now()
		for range n {
			if err := plugin.Ping(ctx); err != nil {
				return fail(err)
			}
		}
		return answer{Ns: time.Since(t).Nanoseconds()}
	}
	a, ok := adapters[f[1]]
	if !ok {
		return fail(fmt.Errorf("no adapter %q", f[1]))
	}
	switch {
	case f[0] == "upstream" && len(f) == 6:
		ref := api.WorkloadRef{Bundle: f[2], Workload: f[3]}
		port, n := int(num(f[4])), num(f[5])
		var u api.Upstream
		var err error
		t := time.Now()
		for range n {
			if u, err = a.Upstream(ctx, ref, port); err != nil {
				return fail(err)
			}
		}
		return answer{Ns: time.Since(t).Nanoseconds(), Answer: fmt.Sprintf("%s:%d", u.Host, u.Port)}
	case f[0] == "apply" && len(f) == 4:
		plan := api.BundlePlan{ID: f[2], Revision: "1",
			Network: api.NetworkRules{Egress: api.EgressPolicy{Kind: api.EgressPolicyNone}}}
		n := num(f[3])
		var h api.BundleHandle
		var err error
		t := time.Now()
		for range n {
			if h, err = a.Apply(ctx, plan); err != nil {
				return fail(err)
			}
		}
		return answer{Ns: time.Since(t).Nanoseconds(), Answer: h.Location}
	case f[0] == "logs" && len(f) == 5:
		limit := uint64(num(f[4]))
		ref := api.WorkloadRef{Bundle: f[2], Workload: f[3]}
		t := time.Now()
		rc, err := a.Logs(ctx, ref, api.LogOptions{LimitBytes: &limit})
		if err != nil {
			return fail(err)
		}
		defer rc.Close()
		// As core reads a log into its own buffer; a buffer of the
		// stream's chunk size, so that no read is split.
		buf := make([]byte, 64<<10)
		var total int64
		for {
			n, err := rc.Read(buf)
			total += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				return fail(err)
			}
		}
		return answer{Ns: time.Since(t).Nanoseconds(), Bytes: total}
	case f[0] == "snapshot" && len(f) == 4:
		var c counter
		t := time.Now()
		if err := a.SnapshotVolume(ctx, api.VolumeHandle{Bundle: f[2], Name: f[3]}, &c); err != nil {
			return fail(err)
		}
		return answer{Ns: time.Since(t).Nanoseconds(), Bytes: int64(c)}
	}
	return fail(fmt.Errorf("not a command: %q", f))
}

// counter is a sink that counts what it is given, as tokio's sink does on
// the in-process side.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
