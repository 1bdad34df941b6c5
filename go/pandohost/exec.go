package pandohost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"pandohost/api"
	"pandohost/internal/pb"
)

// Exec opens an interactive session in a workload's running instance
// core has authorized it and written the audit event.
func (a *Adapter) Exec(ctx context.Context, ref api.WorkloadRef, req api.ExecRequest) (api.ExecSession, error) {
	ctx, rpc, err := a.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := rpc.Exec(ctx)
	if err != nil {
		err = a.callError(ctx, "exec", err)
		cancel()
		return nil, err
	}
	start := &pb.ExecClientMessage{Part: &pb.ExecClientMessage_Start{Start: &pb.ExecStart{
		Workload: toPBWorkloadRef(ref), Request: toPBExecRequest(req),
	}}}
	if err := stream.Send(start); err != nil {
		// The server ended the call: its status says why.
		_, rerr := stream.Recv()
		err = a.callError(ctx, "exec", rerr)
		cancel()
		return nil, err
	}
	// Headers come once the session is open: a workload that is not running
	// fails here.
	if err := opened(stream); err != nil {
		err = a.callError(ctx, "exec", err)
		cancel()
		return nil, err
	}
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	s := &execSession{cancel: cancel, stdout: outR, stderr: errR, done: make(chan struct{})}
	if req.Stdin {
		s.stdin = &execStdin{send: func(m *pb.ExecClientMessage) error {
			s.sendMu.Lock()
			defer s.sendMu.Unlock()
			return stream.Send(m)
		}}
	}
	go func() {
		defer close(s.done)
		var final error
		for {
			m, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					final = errors.New("exec: the session ended without an exit code")
				} else {
					final = a.callError(ctx, "exec", err)
				}
				break
			}
			switch p := m.GetPart().(type) {
			case *pb.ExecServerMessage_Stdout:
				_, _ = outW.Write(p.Stdout)
			case *pb.ExecServerMessage_Stderr:
				_, _ = errW.Write(p.Stderr)
			case *pb.ExecServerMessage_ExitCode:
				s.code = int(p.ExitCode)
				_ = outW.Close()
				_ = errW.Close()
				return
			}
		}
		s.err = final
		_ = outW.CloseWithError(final)
		_ = errW.CloseWithError(final)
	}()
	return s, nil
}

type execSession struct {
	cancel context.CancelFunc
	sendMu sync.Mutex
	stdin  *execStdin
	stdout *io.PipeReader
	stderr *io.PipeReader
	done   chan struct{}
	code   int
	err    error
}

func (s *execSession) Stdin() io.WriteCloser {
	if s.stdin == nil {
		return nil
	}
	return s.stdin
}

func (s *execSession) Stdout() io.Reader { return s.stdout }
func (s *execSession) Stderr() io.Reader { return s.stderr }

// Resize is refused in contract 0.1: the session's one instance is inside
// `wait` for as long as the process runs, and a call cannot enter it
// meanwhile (docs/go.md, "Exec"). The size given with the request is the
// terminal's.
func (s *execSession) Resize(context.Context, api.TerminalSize) error {
	return &api.Error{Kind: api.ErrorUnsupported, Message: "resizing a running session needs contract 0.2 " +
		"(an instance that takes calls while one waits); give the size with the request"}
}

func (s *execSession) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
		return s.code, s.err
	case <-ctx.Done():
		s.cancel()
		<-s.done
		return 0, fmt.Errorf("exec: %w", ctx.Err())
	}
}

func (s *execSession) Close() error {
	s.cancel()
	<-s.done
	return nil
}

type execStdin struct {
	send   func(*pb.ExecClientMessage) error
	closed bool
	mu     sync.Mutex
}

func (w *execStdin) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	for off := 0; off < len(p); off += chunkSize {
		end := min(off+chunkSize, len(p))
		data := append([]byte(nil), p[off:end]...)
		if err := w.send(&pb.ExecClientMessage{Part: &pb.ExecClientMessage_Stdin{Stdin: data}}); err != nil {
			return off, fmt.Errorf("exec: the session's stdin: %w", err)
		}
	}
	return len(p), nil
}

func (w *execStdin) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.send(&pb.ExecClientMessage{Part: &pb.ExecClientMessage_CloseStdin{CloseStdin: &pb.Unit{}}})
}
