package api

import "fmt"

// ErrorKind is the contract's kind of an adapter's error (wit/types.wit,
// variant error).
type ErrorKind string

// The kinds an adapter's error can have.
const (
	ErrorInvalid       ErrorKind = "invalid"
	ErrorNotFound      ErrorKind = "not-found"
	ErrorConflict      ErrorKind = "conflict"
	ErrorUnsupported   ErrorKind = "unsupported"
	ErrorUnavailable   ErrorKind = "unavailable"
	ErrorDenied        ErrorKind = "denied"
	ErrorTimeout       ErrorKind = "timeout"
	ErrorCancelled     ErrorKind = "cancelled"
	ErrorCommandFailed ErrorKind = "command-failed"
	ErrorInternal      ErrorKind = "internal"
)

// Error is an adapter's error, as the contract has it: a kind and a message
// written for an operator. Use errors.As to read it.
type Error struct {
	Kind    ErrorKind
	Message string
	// Set for ErrorCommandFailed: the command's exit code and the tail of
	// its stderr.
	CommandFailed *CommandFailure
}

func (e *Error) Error() string {
	if e.Kind == ErrorCommandFailed && e.CommandFailed != nil {
		return fmt.Sprintf("command-failed: command exited with status %d: %s", e.CommandFailed.ExitCode, e.CommandFailed.Stderr)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Is makes errors.Is(err, &api.Error{Kind: api.ErrorNotFound}) match any
// not-found error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.CommandFailed == nil && t.Kind == e.Kind
}
