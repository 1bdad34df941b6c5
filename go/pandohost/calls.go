package pandohost

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"pandohost/internal/pb"
)

// A call channel carries the adapter service's unary calls on a unix
// socket of its own beside gRPC (proto/pando/serve/v1/calls.proto,
// serve/src/calls.rs): gRPC's HTTP/2 costs a unary call about a quarter of
// a millisecond on a small machine before any adapter code runs, a request
// and its answer on a held-open socket a tenth of that. callConn is a
// grpc.ClientConnInterface, so the generated client does not know: a unary
// call takes an idle channel when there is one and goes on gRPC when there
// is none (while one more is opened in the background, up to
// maxCallChannels); streams always go on gRPC. Cancelling a call's context
// closes its channel, which the plugin takes as the call's cancellation.
type callConn struct {
	cc   *grpc.ClientConn
	open pb.CallChannelsClient
	dir  string
	used *atomic.Int64 // calls answered on a channel

	mu      sync.Mutex
	idle    []*callChannel
	count   int // channels open, idle or in a call
	opening bool
	retryAt time.Time // after an open that failed
	off     bool      // the plugin has no call channels
	closed  bool
}

// maxCallChannels bounds the channels of one plugin: as many calls run on
// channels at once, the rest on gRPC.
const maxCallChannels = 64

// maxCallFrame is the largest answer taken: the service's largest message
// (64 MiB) and room around it, as the plugin's own limit.
const maxCallFrame = 64<<20 + 64<<10

func newCallConn(cc *grpc.ClientConn, dir string, used *atomic.Int64) *callConn {
	return &callConn{cc: cc, open: pb.NewCallChannelsClient(cc), dir: dir, used: used}
}

// warm opens the first channel before the first call needs it.
func (c *callConn) warm(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.opening || c.count > 0 {
		c.mu.Unlock()
		return
	}
	c.opening = true
	c.mu.Unlock()
	c.grow(ctx)
}

// Invoke is a unary call: on an idle channel, else on gRPC.
func (c *callConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	var ch *callChannel
	if plainCall(opts) {
		ch = c.take()
	}
	if ch == nil {
		return c.cc.Invoke(ctx, method, args, reply, opts...)
	}
	reusable, err := ch.call(ctx, method, args, reply)
	c.give(ch, reusable)
	if reusable {
		c.used.Add(1)
	}
	return err
}

// plainCall says whether a call's options leave nothing for gRPC to do: the
// generated client's StaticMethod only. Any other (headers to capture, say)
// is gRPC's to honour.
func plainCall(opts []grpc.CallOption) bool {
	for _, o := range opts {
		if _, ok := o.(grpc.StaticMethodCallOption); !ok {
			return false
		}
	}
	return true
}

// NewStream is a stream: always on gRPC.
func (c *callConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.cc.NewStream(ctx, desc, method, opts...)
}

// take is an idle channel, or nil (and one more channel opening).
func (c *callConn) take() *callChannel {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.idle); n > 0 {
		ch := c.idle[n-1]
		c.idle = c.idle[:n-1]
		return ch
	}
	if !c.closed && !c.off && !c.opening && c.count < maxCallChannels && time.Now().After(c.retryAt) {
		c.opening = true
		go c.grow(context.Background())
	}
	return nil
}

// give returns a channel after its call: to the idle ones, or closed when
// the call left it unusable (cancelled, broken).
func (c *callConn) give(ch *callChannel, reusable bool) {
	c.mu.Lock()
	if reusable && !c.closed {
		c.idle = append(c.idle, ch)
		c.mu.Unlock()
		return
	}
	c.count--
	c.mu.Unlock()
	ch.conn.Close()
}

// grow opens one more channel; a plugin without call channels (an older
// pando-host) is not asked again, another failure not for a second.
func (c *callConn) grow(ctx context.Context) {
	ch, err := c.dial(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opening = false
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			c.off = true
		} else {
			c.retryAt = time.Now().Add(time.Second)
		}
		return
	}
	if c.closed {
		ch.conn.Close()
		return
	}
	c.count++
	c.idle = append(c.idle, ch)
}

// dial listens in the plugin's socket directory and asks the plugin to
// connect there. The plugin connects before it answers, so the connection
// is waiting in the listener's queue when Open returns.
func (c *callConn) dial(ctx context.Context) (*callChannel, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, name, err := listenIn(c.dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if _, err := c.open.Open(metadata.AppendToOutgoingContext(ctx, channelHeader, name), &pb.OpenCallChannelRequest{}); err != nil {
		return nil, err
	}
	if err := l.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return nil, err
	}
	conn, err := l.AcceptUnix()
	if err != nil {
		return nil, fmt.Errorf("accepting the plugin's call channel: %w", err)
	}
	return &callChannel{conn: conn, r: bufio.NewReaderSize(conn, 16<<10)}, nil
}

// close closes the idle channels and, as their calls end, the others.
func (c *callConn) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.count -= len(idle)
	c.mu.Unlock()
	for _, ch := range idle {
		ch.conn.Close()
	}
}

// callChannel is one connection, in one call at a time.
type callChannel struct {
	conn *net.UnixConn
	r    *bufio.Reader
	out  []byte
	in   []byte
}

// call sends one call and reads its answer: whether the channel can carry
// another call, and the call's error (a gRPC status, as gRPC would give
// it).
func (ch *callChannel) call(ctx context.Context, method string, args, reply any) (reusable bool, err error) {
	in, ok := args.(proto.Message)
	out, ok2 := reply.(proto.Message)
	if !ok || !ok2 {
		return true, status.Errorf(codes.Internal, "%s: a call channel carries protobuf messages only", method)
	}
	req := &pb.CallRequest{Method: method}
	md, _ := metadata.FromOutgoingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				v = base64.RawStdEncoding.EncodeToString([]byte(v))
			}
			req.Headers = append(req.Headers, &pb.Header{Name: k, Value: v})
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return true, status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
		req.Headers = append(req.Headers, &pb.Header{Name: "grpc-timeout", Value: grpcTimeout(left)})
	}
	if err := ctx.Err(); err != nil {
		return true, status.FromContextError(err).Err()
	}
	if req.Message, err = proto.Marshal(in); err != nil {
		return true, status.Errorf(codes.Internal, "%s: encoding the request: %v", method, err)
	}
	ch.out = append(ch.out[:0], 0, 0, 0, 0)
	if ch.out, err = (proto.MarshalOptions{}).MarshalAppend(ch.out, req); err != nil {
		return true, status.Errorf(codes.Internal, "%s: encoding the request: %v", method, err)
	}
	binary.LittleEndian.PutUint32(ch.out, uint32(len(ch.out)-4))

	// A cancelled context wakes the write or the read, and the channel
	// closes: the plugin takes that as the call's cancellation.
	stop := context.AfterFunc(ctx, func() { _ = ch.conn.SetDeadline(time.Unix(1, 0)) })
	var answer pb.CallReply
	_, ioErr := ch.conn.Write(ch.out)
	if ioErr == nil {
		ioErr = ch.read(&answer)
	}
	if !stop() {
		return false, status.FromContextError(ctx.Err()).Err()
	}
	if ioErr != nil {
		return false, status.Errorf(codes.Unavailable, "the plugin's call channel broke: %v", ioErr)
	}
	if answer.Code != 0 {
		return true, answerStatus(&answer)
	}
	if err := proto.Unmarshal(answer.Message, out); err != nil {
		return true, status.Errorf(codes.Internal, "%s: decoding the answer: %v", method, err)
	}
	return true, nil
}

// read reads one answer.
func (ch *callChannel) read(answer *pb.CallReply) error {
	var head [4]byte
	if _, err := io.ReadFull(ch.r, head[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(head[:])
	if n > maxCallFrame {
		return fmt.Errorf("an answer of %d bytes, over the %d a call may have", n, maxCallFrame)
	}
	buf := ch.in
	if uint32(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(ch.r, buf); err != nil {
		return err
	}
	// Unmarshal copies: the buffer is kept for the next answer unless it
	// grew past what small answers need.
	if n <= 1<<20 {
		ch.in = buf
	}
	return proto.Unmarshal(buf, answer)
}

// answerStatus is a failed answer's status as grpc-go builds it from the
// trailers: the details' google.rpc.Status when there is one.
func answerStatus(a *pb.CallReply) error {
	if len(a.Details) > 0 {
		var st spb.Status
		if proto.Unmarshal(a.Details, &st) == nil && st.GetCode() == a.Code {
			return status.ErrorProto(&st)
		}
	}
	return status.Error(codes.Code(a.Code), a.Text)
}

// grpcTimeout is a deadline as gRPC's grpc-timeout header writes it: at
// most eight digits, rounded up, in the finest unit that holds it.
func grpcTimeout(t time.Duration) string {
	const most = 1e8 - 1
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}} {
		if n := (t + u.d - 1) / u.d; n <= most {
			return strconv.FormatInt(int64(n), 10) + u.unit
		}
	}
	return strconv.FormatInt(int64((t+time.Hour-1)/time.Hour), 10) + "H"
}
