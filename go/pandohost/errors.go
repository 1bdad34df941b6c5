package pandohost

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"pandohost/api"
	"pandohost/internal/pb"
)

// HostError is a failure of the adapter host rather than of the adapter: the
// call never reached the adapter (a request the host could not take, an
// adapter name it does not serve), or the adapter's instance failed under it
// (a trap, a limit, a deadline).
type HostError struct {
	// Kind is the host's kind: trap, stack-overflow, memory-exhausted,
	// deadline, cancelled, quarantined, busy, host, no-adapter,
	// invalid-request.
	Kind    string
	Message string
	// Code is the gRPC status code it came with.
	Code codes.Code
}

func (e *HostError) Error() string { return fmt.Sprintf("pando-host: %s: %s", e.Kind, e.Message) }

// PluginError is the plugin process failing: it could not start (the
// host's words on why, such as a component of the wrong contract version),
// or it went away in the middle of a call. The next call starts it again.
type PluginError struct {
	// What was being done.
	Op string
	// The plugin's last words on stderr, when it wrote any.
	Stderr string
	Err    error
}

func (e *PluginError) Error() string {
	if e.Stderr != "" {
		return fmt.Sprintf("pando-host serve: %s: %v: %s", e.Op, e.Err, e.Stderr)
	}
	return fmt.Sprintf("pando-host serve: %s: %v", e.Op, e.Err)
}

func (e *PluginError) Unwrap() error { return e.Err }

// callError turns a call's gRPC error into the contract's error
// (*api.Error), the host's (*HostError), the context's own error, or a
// *PluginError when the connection to the plugin failed.
func (a *Adapter) callError(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return &PluginError{Op: op, Err: err, Stderr: a.p.stderr.Tail()}
	}
	for _, d := range st.Details() {
		switch e := d.(type) {
		case *pb.Error:
			return fromPBError(e)
		case *pb.HostError:
			return &HostError{Kind: e.GetKind(), Message: e.GetMessage(), Code: st.Code()}
		}
	}
	// No details: the transport's own status (the plugin went away, the
	// connection broke).
	if st.Code() == codes.Unavailable || st.Code() == codes.Canceled || st.Code() == codes.Internal {
		a.p.dropIfDead()
		return &PluginError{Op: op, Err: err, Stderr: a.p.stderr.Tail()}
	}
	return &HostError{Kind: "grpc", Message: st.Message(), Code: st.Code()}
}

func fromPBError(e *pb.Error) *api.Error {
	switch c := e.GetCase().(type) {
	case *pb.Error_Invalid:
		return &api.Error{Kind: api.ErrorInvalid, Message: c.Invalid}
	case *pb.Error_NotFound:
		return &api.Error{Kind: api.ErrorNotFound, Message: c.NotFound}
	case *pb.Error_Conflict:
		return &api.Error{Kind: api.ErrorConflict, Message: c.Conflict}
	case *pb.Error_Unsupported:
		return &api.Error{Kind: api.ErrorUnsupported, Message: c.Unsupported}
	case *pb.Error_Unavailable:
		return &api.Error{Kind: api.ErrorUnavailable, Message: c.Unavailable}
	case *pb.Error_Denied:
		return &api.Error{Kind: api.ErrorDenied, Message: c.Denied}
	case *pb.Error_Timeout:
		return &api.Error{Kind: api.ErrorTimeout, Message: c.Timeout}
	case *pb.Error_Cancelled:
		return &api.Error{Kind: api.ErrorCancelled, Message: c.Cancelled}
	case *pb.Error_CommandFailed:
		f := &api.CommandFailure{ExitCode: c.CommandFailed.GetExitCode(), Stderr: c.CommandFailed.GetStderr()}
		return &api.Error{Kind: api.ErrorCommandFailed, Message: f.Stderr, CommandFailed: f}
	case *pb.Error_Internal:
		return &api.Error{Kind: api.ErrorInternal, Message: c.Internal}
	}
	return &api.Error{Kind: api.ErrorInternal, Message: "an error of a kind this module does not know"}
}

// IsKind says whether err is an adapter error of this kind.
func IsKind(err error, kind api.ErrorKind) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == kind
}
