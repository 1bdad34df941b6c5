package pandohost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"

	"google.golang.org/grpc/metadata"

	"pandohost/internal/pb"
)

// A byte channel carries a bulk stream's bytes (a snapshot, a log, a run's
// stdout, a restore's archive, an image) on a unix socket of its own beside the gRPC call, as go-plugin's
// broker gives plugins extra connections: the bytes skip HTTP/2's 16 KiB
// frames and protobuf, which cost a snapshot a fifth more CPU per MiB. The
// client listens at NAME.sock in the plugin's own socket directory (which
// only this user may add to), names it in the pando-channel header, and the
// plugin connects. The plugin writes every byte and closes its side before
// it ends the call, so end-of-file on the socket is never success by
// itself: the call's status says whether the bytes are whole (and the other
// way, upload's word on the gRPC stream says so to the plugin).
type byteChannel struct {
	l    *net.UnixListener
	name string
	used *atomic.Int64 // the plugin's count of channels the server connected
}

// channelHeader names the socket in the request (serve/src/channel.rs).
const channelHeader = "pando-channel"

// openChannel listens for one call's bytes; nil when the plugin's socket
// directory is not known or not open to this process, and the bytes then
// come as chunks.
func (p *Plugin) openChannel() *byteChannel {
	p.mu.Lock()
	dir, disabled := p.sockDir, p.cfg.NoByteChannels
	p.mu.Unlock()
	if dir == "" || disabled {
		return nil
	}
	l, name, err := listenIn(dir)
	if err != nil {
		return nil
	}
	return &byteChannel{l: l, name: name, used: &p.channelsUsed}
}

// listenIn listens at a new random NAME.sock in dir, the plugin's socket
// directory, where the plugin connects to the sockets it is told of
// (serve/src/channel.rs). Closing the listener removes the file.
func listenIn(dir string) (*net.UnixListener, string, error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, "", err
	}
	name := hex.EncodeToString(id[:])
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name+".sock"), Net: "unix"})
	if err != nil {
		return nil, "", err
	}
	return l, name, nil
}

// outgoing is ctx asking the plugin for this channel (ctx itself for no
// channel).
func (c *byteChannel) outgoing(ctx context.Context) context.Context {
	if c == nil {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, channelHeader, c.name)
}

// close stops listening and removes the socket's file.
func (c *byteChannel) close() {
	if c != nil {
		c.l.Close()
	}
}

// accepted is the listener's one connection, or why there is none.
type accepted struct {
	conn net.Conn
	err  error
}

// accepting accepts the plugin's one connection in the background. When
// the call ends without it, abandon closes a connection the listener takes
// all the same (the listener itself is closed by the caller's close).
func (c *byteChannel) accepting() (acc <-chan accepted, abandon func()) {
	ch := make(chan accepted, 1)
	go func() {
		conn, err := c.l.Accept()
		ch <- accepted{conn, err}
	}()
	return ch, func() {
		go func() {
			if a := <-ch; a.conn != nil {
				a.conn.Close()
			}
		}()
	}
}

// connected waits for the plugin to connect, while the call's stream
// (drained by recv, which only ends it) runs: the connection and a channel
// that gives the call's end once the bytes are read (nil for success), or
// the call's failure when it ended without connecting.
func (c *byteChannel) connected(recv func() (*pb.Chunk, error)) (net.Conn, <-chan error, error) {
	defer c.close()
	acc, abandon := c.accepting()
	ended := make(chan error, 1)
	go func() { ended <- drain(recv) }()
	select {
	case a := <-acc:
		if a.err != nil {
			if err := <-ended; err != nil {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("accepting the plugin's byte channel: %w", a.err)
		}
		c.used.Add(1)
		return a.conn, ended, nil
	case err := <-ended:
		if err != nil {
			abandon()
			return nil, nil, err
		}
		// A call ends well only after it connected and wrote its bytes:
		// the connection waits in the listener's queue.
		a := <-acc
		if a.err != nil {
			return nil, nil, errors.New("the call ended without connecting its byte channel")
		}
		c.used.Add(1)
		done := make(chan error, 1)
		done <- nil
		return a.conn, done, nil
	}
}

// drain reads a stream that carries no chunks of its own (its bytes are on
// the channel) to its end: nil when it ended well.
func drain(recv func() (*pb.Chunk, error)) error {
	for {
		c, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(c.GetData()) > 0 {
			return errors.New("the plugin sent chunks on a call whose bytes go on a byte channel")
		}
	}
}

// download runs a call whose answer is a stream of bytes and writes them
// into dst: on a byte channel when the plugin can take one, else from the
// stream's chunks. recvErr is the call's failure, writeErr dst's.
func (a *Adapter) download(ctx context.Context, call func(context.Context) (chunkStream, error), dst io.Writer) (recvErr, writeErr error) {
	ch := a.p.openChannel()
	stream, err := call(ch.outgoing(ctx))
	if err != nil {
		ch.close()
		return err, nil
	}
	if ch == nil {
		return copyChunks(stream.Recv, dst)
	}
	conn, ended, err := ch.connected(stream.Recv)
	if err != nil {
		return err, nil
	}
	defer conn.Close()
	w := &watchedWriter{w: dst}
	// Each read takes all the socket holds (its buffer is some hundreds of
	// KiB), so the server is woken to write on once per buffer rather than
	// once per io.Copy's 32 KiB.
	if _, err := io.CopyBuffer(w, conn, make([]byte, 1<<20)); w.err != nil {
		return nil, w.err
	} else if err != nil {
		// The socket broke: the call's status says why.
		if end := <-ended; end != nil {
			return end, nil
		}
		return err, nil
	}
	return <-ended, nil
}

// chunkStream is a server stream of chunks.
type chunkStream interface {
	Recv() (*pb.Chunk, error)
}

// watchedWriter keeps dst's own failure apart from the socket's in a copy.
type watchedWriter struct {
	w   io.Writer
	err error
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// channelReader reads a log from its byte channel; at the socket's end the
// call's status decides between io.EOF and the call's error.
type channelReader struct {
	conn   net.Conn
	ended  <-chan error
	cancel context.CancelFunc
	fail   func(error) error
	err    error
}

func (r *channelReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.conn.Read(p)
	if err != nil {
		r.err = io.EOF
		if end := <-r.ended; end != nil {
			r.err = r.fail(end)
		} else if !errors.Is(err, io.EOF) {
			r.err = r.fail(err)
		}
		if n > 0 {
			return n, nil
		}
		return 0, r.err
	}
	return n, nil
}

func (r *channelReader) Close() error {
	r.cancel()
	return r.conn.Close()
}

// sender is the client's side of a call that streams to the server.
type sender interface {
	CloseSend() error
	RecvMsg(m any) error
}

// upload sends src, the rest of a call that streams to the server, and
// reads the call's answer into reply: on the byte channel c, then a chunk
// of no bytes to say they are whole; else as chunks sent by chunk. readErr
// is src's failure — the call is cancelled first, so the server takes
// nothing short for whole — callErr the call's.
func (c *byteChannel) upload(s sender, cancel context.CancelFunc, src io.Reader, chunk func([]byte) error, reply any) (readErr, callErr error) {
	if c == nil {
		if err := sendChunks(src, chunk); err != nil {
			cancel()
			return err, nil
		}
		// Whether all was sent or the server ended the call early, its
		// status says how it went.
		_ = s.CloseSend()
		return nil, s.RecvMsg(reply)
	}
	defer c.close()
	acc, abandon := c.accepting()
	// The answer comes once the server ended the call: after it read the
	// channel to its end and saw the half-close below, or when it failed.
	ended := make(chan error, 1)
	go func() { ended <- s.RecvMsg(reply) }()
	var conn net.Conn
	select {
	case a := <-acc:
		if a.err != nil {
			cancel()
			return nil, <-ended
		}
		conn = a.conn
	case err := <-ended:
		abandon()
		if err == nil {
			err = errors.New("the call ended without reading its byte channel")
		}
		return nil, err
	}
	defer conn.Close()
	c.used.Add(1)
	r := &watchedReader{r: src}
	if _, err := io.Copy(conn, r); r.err != nil {
		// Cancelled before the socket closes: the server's end-of-file
		// then meets a cancelled call, not a half-close.
		cancel()
		<-ended
		return r.err, nil
	} else if err != nil {
		// The server stopped reading: its status says why.
		return nil, <-ended
	}
	if uc, ok := conn.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	// The bytes are whole: one message of none, then the stream's end
	// (the server reads a cancel as an end too, so the end alone cannot
	// say it).
	_ = chunk([]byte{})
	_ = s.CloseSend()
	return nil, <-ended
}

// watchedReader keeps src's own failure apart from the socket's in a copy.
type watchedReader struct {
	r   io.Reader
	err error
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}
