package api

import (
	"context"
	"io"
)

// ExecSession is an interactive session in a running workload (Exec).
type ExecSession interface {
	// Stdin is the process's stdin; nil when the request did not ask for
	// it. Closing it ends the process's stdin.
	Stdin() io.WriteCloser
	// Stdout is the process's stdout (with a terminal, stdout and stderr
	// together). Read it while the session runs: unread output holds the
	// session back.
	Stdout() io.Reader
	// Stderr is the process's stderr; empty with a terminal.
	Stderr() io.Reader
	// Resize resizes the terminal.
	Resize(ctx context.Context, size TerminalSize) error
	// Wait waits for the process to exit and returns its exit code.
	Wait(ctx context.Context) (int, error)
	// Close ends the session (the process is cancelled if it still runs).
	Close() error
}

// The reference adapter's names for some of the contract's types.
type (
	// Capacity is what the runtime can hold for Pando.
	Capacity = CapacityReport
	// InUse is what Pando has on the runtime.
	InUse = InUseReport
	// Upstream is where Pando's proxy reaches a workload's port.
	Upstream = UpstreamAddress
)
