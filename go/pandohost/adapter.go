package pandohost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"pandohost/api"
	"pandohost/internal/pb"
)

// Adapter is a loaded WebAssembly adapter with the reference adapter's
// method set: core calls it as it calls a compiled-in one. Safe for
// concurrent use; calls are served concurrently by the host's instance
// pool. If the plugin process dies, the call in flight fails with a
// *PluginError and the next call starts it again.
type Adapter struct {
	p    *Plugin
	name string // the pando-adapter header; empty for a plugin's only adapter
	owns bool   // made by Load: Close stops the plugin
	info api.KindInfo
}

// Configure is not taken at run time: a Wasm adapter's configuration is
// given at load (Config.Config), checked by the adapter there, and every
// instance the host makes is configured with it. A different configuration
// is a new Load.
func (a *Adapter) Configure(_ context.Context, _ json.RawMessage) error {
	return &api.Error{Kind: api.ErrorUnsupported, Message: "a Wasm adapter is configured at load " +
		"(pandohost.Config.Config); load it again with the new configuration"}
}

// Capabilities reports what the adapter can do.
func (a *Adapter) Capabilities(ctx context.Context) (api.RuntimeCapabilities, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.RuntimeCapabilities{}, err
	}
	m, err := rpc.Capabilities(ctx, &pb.CapabilitiesRequest{})
	if err != nil {
		return api.RuntimeCapabilities{}, a.callError(ctx, "capabilities", err)
	}
	return fromPBRuntimeCapabilities(m)
}

// HealthCheck says whether the runtime can be used now (O-43).
func (a *Adapter) HealthCheck(ctx context.Context) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	_, err = rpc.HealthCheck(ctx, &pb.HealthCheckRequest{})
	return a.callError(ctx, "health-check", err)
}

// Capacity is what the runtime can hold for Pando.
func (a *Adapter) Capacity(ctx context.Context) (api.Capacity, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.Capacity{}, err
	}
	m, err := rpc.Capacity(ctx, &pb.CapacityRequest{})
	if err != nil {
		return api.Capacity{}, a.callError(ctx, "capacity", err)
	}
	return fromPBCapacityReport(m)
}

// LargestFitFor is the roomiest node for one bundle; nil when no node is
// eligible.
func (a *Adapter) LargestFitFor(ctx context.Context, bundleID string) (*api.Fit, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return nil, err
	}
	m, err := rpc.LargestFitFor(ctx, &pb.LargestFitForRequest{Bundle: bundleID})
	if err != nil {
		return nil, a.callError(ctx, "largest-fit-for", err)
	}
	return optFromPB(m.GetFit(), fromPBFit)
}

// InUse is what Pando has on the runtime.
func (a *Adapter) InUse(ctx context.Context) (api.InUse, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.InUse{}, err
	}
	m, err := rpc.InUse(ctx, &pb.InUseRequest{})
	if err != nil {
		return api.InUse{}, a.callError(ctx, "in-use", err)
	}
	return fromPBInUseReport(m)
}

// Apply converges an app toward the plan (idempotent).
func (a *Adapter) Apply(ctx context.Context, p api.BundlePlan) (api.BundleHandle, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.BundleHandle{}, err
	}
	m, err := rpc.Apply(ctx, toPBBundlePlan(p))
	if err != nil {
		return api.BundleHandle{}, a.callError(ctx, "apply", err)
	}
	return fromPBBundleHandle(m)
}

// Observe reports what exists for an app; it never remediates.
func (a *Adapter) Observe(ctx context.Context, ref api.BundleRef) (api.ObservedBundle, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.ObservedBundle{}, err
	}
	m, err := rpc.Observe(ctx, toPBBundleRef(ref))
	if err != nil {
		return api.ObservedBundle{}, a.callError(ctx, "observe", err)
	}
	return fromPBObservedBundle(m)
}

// Stop stops an app's running workloads and keeps everything else.
func (a *Adapter) Stop(ctx context.Context, ref api.BundleRef) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	_, err = rpc.Stop(ctx, toPBBundleRef(ref))
	return a.callError(ctx, "stop", err)
}

// Destroy removes an app; its volumes stay with KeepVolumes.
func (a *Adapter) Destroy(ctx context.Context, ref api.BundleRef, opts api.DestroyOptions) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	_, err = rpc.Destroy(ctx, &pb.DestroyRequest{Bundle: toPBBundleRef(ref), Options: toPBDestroyOptions(opts)})
	return a.callError(ctx, "destroy", err)
}

// Usage is what an app uses.
func (a *Adapter) Usage(ctx context.Context, ref api.BundleRef) (api.BundleUsage, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.BundleUsage{}, err
	}
	m, err := rpc.Usage(ctx, toPBBundleRef(ref))
	if err != nil {
		return api.BundleUsage{}, a.callError(ctx, "usage", err)
	}
	return fromPBBundleUsage(m)
}

// CreateVolume makes a volume for an app.
func (a *Adapter) CreateVolume(ctx context.Context, req api.VolumeRequest) (api.VolumeHandle, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.VolumeHandle{}, err
	}
	m, err := rpc.CreateVolume(ctx, toPBVolumeRequest(req))
	if err != nil {
		return api.VolumeHandle{}, a.callError(ctx, "create-volume", err)
	}
	return fromPBVolumeHandle(m)
}

// DestroyVolume deletes a volume and its data.
func (a *Adapter) DestroyVolume(ctx context.Context, h api.VolumeHandle) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	_, err = rpc.DestroyVolume(ctx, toPBVolumeHandle(h))
	return a.callError(ctx, "destroy-volume", err)
}

// SnapshotVolume writes a volume's contents as a tar stream into dst.
func (a *Adapter) SnapshotVolume(ctx context.Context, h api.VolumeHandle, dst io.Writer) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recvErr, writeErr := a.download(ctx, func(ctx context.Context) (chunkStream, error) {
		return rpc.SnapshotVolume(ctx, toPBVolumeHandle(h))
	}, dst)
	if writeErr != nil {
		return fmt.Errorf("snapshot-volume: writing the archive: %w", writeErr)
	}
	return a.callError(ctx, "snapshot-volume", recvErr)
}

// RestoreVolume replaces a volume's contents with a tar stream
// SnapshotVolume wrote, in place.
func (a *Adapter) RestoreVolume(ctx context.Context, h api.VolumeHandle, src io.Reader) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := a.p.openChannel()
	stream, err := rpc.RestoreVolume(ch.outgoing(ctx))
	if err != nil {
		ch.close()
		return a.callError(ctx, "restore-volume", err)
	}
	first := &pb.RestoreVolumeRequest{Part: &pb.RestoreVolumeRequest_Volume{Volume: toPBVolumeHandle(h)}}
	if err := stream.Send(first); err != nil {
		ch.close()
		_, err = stream.CloseAndRecv()
		return a.callError(ctx, "restore-volume", err)
	}
	// A failed read cancels the call, which leaves the volume as it was.
	readErr, err := ch.upload(stream, cancel, src, func(data []byte) error {
		return stream.Send(&pb.RestoreVolumeRequest{Part: &pb.RestoreVolumeRequest_Data{Data: data}})
	}, new(pb.RestoreVolumeResponse))
	if readErr != nil {
		return fmt.Errorf("restore-volume: reading the archive: %w", readErr)
	}
	return a.callError(ctx, "restore-volume", err)
}

// HasImage says whether an image can be run without importing it.
func (a *Adapter) HasImage(ctx context.Context, image string) (bool, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return false, err
	}
	m, err := rpc.HasImage(ctx, &pb.HasImageRequest{Image: image})
	if err != nil {
		return false, a.callError(ctx, "has-image", err)
	}
	return m.GetPresent(), nil
}

// ImportImage loads an image from a tar stream; its reference.
func (a *Adapter) ImportImage(ctx context.Context, src io.Reader) (string, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := a.p.openChannel()
	stream, err := rpc.ImportImage(ch.outgoing(ctx))
	if err != nil {
		ch.close()
		return "", a.callError(ctx, "import-image", err)
	}
	var m pb.ImportImageResponse
	readErr, err := ch.upload(stream, cancel, src, func(data []byte) error {
		return stream.Send(&pb.Chunk{Data: data})
	}, &m)
	if readErr != nil {
		return "", fmt.Errorf("import-image: reading the image: %w", readErr)
	}
	if err != nil {
		return "", a.callError(ctx, "import-image", err)
	}
	return m.GetImage(), nil
}

// opened waits for the header the host sends once a stream's source is
// open (`pando-opened`); without it the call failed before it began, and its
// status is the first thing the stream returns.
func opened(stream grpc.ClientStream) error {
	md, err := stream.Header()
	if err != nil {
		return err
	}
	if len(md.Get("pando-opened")) > 0 {
		return nil
	}
	if err := stream.RecvMsg(new(pb.Chunk)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return errors.New("the stream ended before it was opened")
}

// chunkSize is what one message carries of a stream the client sends.
const chunkSize = 64 << 10

// sendChunks sends src in chunks of at most chunkSize until it ends or a
// send fails (the server ended the call; its status, from CloseAndRecv,
// says why). It returns only src's own failure.
func sendChunks(src io.Reader, send func([]byte) error) error {
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if send(append([]byte(nil), buf[:n]...)) != nil {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// copyChunks writes each chunk a server stream sends into dst until the
// stream ends: recvErr is the stream's failure (its status), writeErr dst's.
func copyChunks(recv func() (*pb.Chunk, error), dst io.Writer) (recvErr, writeErr error) {
	for {
		c, err := recv()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
		if _, err := dst.Write(c.GetData()); err != nil {
			return nil, err
		}
	}
}

// Logs streams a workload's log, its newest instance's, a finished one
// included. Close the reader to stop following.
func (a *Adapter) Logs(ctx context.Context, ref api.WorkloadRef, opts api.LogOptions) (io.ReadCloser, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	ch := a.p.openChannel()
	stream, err := rpc.Logs(ch.outgoing(ctx), &pb.LogsRequest{Workload: toPBWorkloadRef(ref), Options: toPBLogOptions(opts)})
	if err == nil {
		// A log that cannot be read fails here, not at the first Read.
		err = opened(stream)
	}
	if err != nil {
		ch.close()
		err = a.callError(ctx, "logs", err)
		cancel()
		return nil, err
	}
	fail := func(err error) error { return a.callError(ctx, "logs", err) }
	if ch != nil {
		conn, ended, err := ch.connected(stream.Recv)
		if err != nil {
			cancel()
			return nil, fail(err)
		}
		return &channelReader{conn: conn, ended: ended, cancel: cancel, fail: fail}, nil
	}
	return &chunkReader{recv: func() ([]byte, error) {
		c, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		return c.GetData(), nil
	}, cancel: cancel, fail: fail}, nil
}

// chunkReader reads a server stream of chunks as bytes.
type chunkReader struct {
	recv   func() ([]byte, error)
	cancel context.CancelFunc
	fail   func(error) error
	rest   []byte
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		data, err := r.recv()
		if errors.Is(err, io.EOF) {
			r.err = io.EOF
			continue
		}
		if err != nil {
			r.err = r.fail(err)
			continue
		}
		r.rest = data
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

func (r *chunkReader) Close() error {
	r.cancel()
	return nil
}

// Run runs a command to completion in a workload's running instance
// its stdout into req.Stdout as it comes; a non-zero exit is an
// *api.Error of kind command-failed with the stderr that explains it.
func (a *Adapter) Run(ctx context.Context, ref api.WorkloadRef, req api.RunRequest) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := req.Stdout
	if out == nil {
		out = io.Discard
	}
	recvErr, writeErr := a.download(ctx, func(ctx context.Context) (chunkStream, error) {
		return rpc.Run(ctx, &pb.RunCallRequest{Workload: toPBWorkloadRef(ref), Request: toPBRunRequest(req)})
	}, out)
	if writeErr != nil {
		return fmt.Errorf("run: writing stdout: %w", writeErr)
	}
	return a.callError(ctx, "run", recvErr)
}

// Trial runs a workload once, watched, and reports what it did.
// Cancelling ctx ends the trial; the adapter removes what it made.
func (a *Adapter) Trial(ctx context.Context, req api.TrialRequest) (api.TrialResult, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.TrialResult{}, err
	}
	m, err := rpc.Trial(ctx, toPBTrialRequest(req))
	if err != nil {
		return api.TrialResult{}, a.callError(ctx, "trial", err)
	}
	return fromPBTrialResult(m)
}

// Upstream is where Pando's proxy reaches a workload's port.
func (a *Adapter) Upstream(ctx context.Context, ref api.WorkloadRef, port int) (api.Upstream, error) {
	if port < 0 || port > 65535 {
		return api.Upstream{}, &api.Error{Kind: api.ErrorInvalid, Message: fmt.Sprintf("port %d is not a port (0-65535)", port)}
	}
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.Upstream{}, err
	}
	m, err := rpc.Upstream(ctx, &pb.UpstreamRequest{Workload: toPBWorkloadRef(ref), Port: uint32(port)})
	if err != nil {
		return api.Upstream{}, a.callError(ctx, "upstream", err)
	}
	return fromPBUpstreamAddress(m)
}

// WatchBundles sends every change to an app's workloads to sink, in order,
// until ctx is cancelled (nil) or the runtime cannot resume the watch (an
// *api.Error of kind unavailable: core lists and sweeps, then watches
// again, as the spec says of the reference adapter).
func (a *Adapter) WatchBundles(ctx context.Context, sink func(api.BundleEvent)) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	stream, err := rpc.WatchBundles(ctx, &pb.WatchBundlesRequest{})
	if err != nil {
		return a.callError(ctx, "watch-bundles", err)
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return &api.Error{Kind: api.ErrorUnavailable, Message: "the watch ended without saying why; list and watch again"}
			}
			return a.callError(ctx, "watch-bundles", err)
		}
		switch p := m.GetPart().(type) {
		case *pb.WatchBundlesMessage_Event:
			ev, err := fromPBBundleEvent(p.Event)
			if err != nil {
				return fmt.Errorf("watch-bundles: %w", err)
			}
			sink(ev)
		case *pb.WatchBundlesMessage_End:
			if p.End == pb.WatchEnd_WATCH_END_CANCELLED {
				return nil
			}
			return &api.Error{Kind: api.ErrorUnavailable, Message: "the runtime can no longer resume the watch (expired): list and sweep, then watch again"}
		}
	}
}

// ApplyEdge creates or updates the edge.
func (a *Adapter) ApplyEdge(ctx context.Context, p api.EdgePlan) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	_, err = rpc.ApplyEdge(ctx, toPBEdgePlan(p))
	return a.callError(ctx, "apply-edge", err)
}

// ObserveEdge reports whether an edge serves, in an operator's words.
func (a *Adapter) ObserveEdge(ctx context.Context, name string) (api.EdgeState, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return api.EdgeState{}, err
	}
	m, err := rpc.ObserveEdge(ctx, &pb.ObserveEdgeRequest{Name: name})
	if err != nil {
		return api.EdgeState{}, a.callError(ctx, "observe-edge", err)
	}
	return fromPBEdgeState(m)
}

// RemoveEdge removes an edge and everything made for it.
func (a *Adapter) RemoveEdge(ctx context.Context, name string) error {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return err
	}
	_, err = rpc.RemoveEdge(ctx, &pb.RemoveEdgeRequest{Name: name})
	return a.callError(ctx, "remove-edge", err)
}

// Edges are the edges that exist.
func (a *Adapter) Edges(ctx context.Context) ([]string, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return nil, err
	}
	m, err := rpc.Edges(ctx, &pb.EdgesRequest{})
	if err != nil {
		return nil, a.callError(ctx, "edges", err)
	}
	return m.GetNames(), nil
}

// EdgeVolumes are the volumes the edge keeps.
func (a *Adapter) EdgeVolumes(ctx context.Context) ([]api.VolumeHandle, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return nil, err
	}
	m, err := rpc.EdgeVolumes(ctx, &pb.EdgeVolumesRequest{})
	if err != nil {
		return nil, a.callError(ctx, "edge-volumes", err)
	}
	return mapSliceErr(m.GetVolumes(), fromPBVolumeHandle)
}
