// Command worker is the briefd compaction worker and its offline tools.
//
//	worker run         consume snapshots from JetStream, compact, store briefings (the service)
//	worker compact     compact one history file and print the result as JSON
//	worker eval        the quality yardsticks over folders of histories (identifier recall, chained), probe packets and grades
//	worker replay      re-run stored compactions (a conversation, a tenant, a time range or all) and compare; JSON and an HTML report
//	worker rebuild     recompute every conversation's latest briefing from the stream (a store lost)
//	worker healthcheck probe a worker's /readyz (for container health checks)
//
// A bare "worker" prints the commands. Every flag also reads a BRIEFD_*
// environment variable; flags win.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// The commands' one-line descriptions: the first line of their -h.
const (
	summaryRun         = "Consume snapshots from JetStream, compact them, store the briefings: the service."
	summaryCompact     = "Compact one history file (or - for stdin) with no servers, and print the result as JSON."
	summaryEval        = "Measure the briefing's quality over folders of histories (identifier recall, chained), write probe-set packets, aggregate grades."
	summaryReplay      = "Re-run stored compactions from the audit trail with today's engine or another model, and compare."
	summaryRebuild     = "Recompute every conversation's latest briefing from the snapshot stream, after a store lost its data."
	summaryHealthcheck = "Probe a worker's readiness endpoint (for container health checks)."
	summaryVersion     = "Print the engine version."
)

// command is one subcommand: its name, what it does in one line (the first
// line of its -h), and how it runs.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands lists the subcommands in the order usage shows them.
var commands = []command{
	{"run", summaryRun,
		func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runService(ctx, args, stdout, stderr)
		}},
	{"compact", summaryCompact, runCompact},
	{"eval", summaryEval,
		func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runEval(ctx, args, stdout, stderr)
		}},
	{"replay", summaryReplay,
		func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runReplay(ctx, args, stdout, stderr)
		}},
	{"rebuild", summaryRebuild,
		func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runRebuild(ctx, args, stdout, stderr)
		}},
	{"healthcheck", summaryHealthcheck,
		func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runHealthcheck(ctx, args, stdout, stderr)
		}},
	{"version", summaryVersion,
		func(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) error { return runVersion(stdout) }},
}

// usage lists the subcommands; printed for a bare "worker", -h and an
// unknown command.
func usage() string {
	var b strings.Builder
	b.WriteString("worker: the briefd compaction service and its tools.\n\nusage: worker <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	b.WriteString("\nStart the service with 'worker run' (it creates the streams, a consumer and a key-value bucket on\n" +
		"the NATS server it connects to). Run 'worker <command> -h' for the flags of a command.\n")
	return b.String()
}

// Main runs the command line args and returns the process exit code, so
// tests can drive the command without a subprocess. A bare "worker"
// prints the commands and exits 2: it never starts a service silently.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name, args := args[0], args[1:]
	var cmd *command
	for i := range commands {
		if commands[i].name == name {
			cmd = &commands[i]
		}
	}
	switch {
	case cmd != nil:
	case name == "help" || name == "-h" || name == "--help" || name == "-help":
		fmt.Fprint(stdout, usage())
		return 0
	default:
		fmt.Fprintf(stderr, "worker: unknown command %q\n\n%s", name, usage())
		return 2
	}
	err := cmd.run(ctx, args, stdin, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "worker %s: %v\n", name, err)
		return 2
	case errors.Is(err, errNotCompacted):
		return 3 // the result is on stdout; the status says nothing was compacted
	default:
		fmt.Fprintf(stderr, "worker %s: %v\n", name, err)
		return 1
	}
}

// errNotCompacted is returned by compact when it printed a result that
// did not compact (exit code 3), so that scripts tell it from a compaction.
var errNotCompacted = errors.New("not compacted")

// errUsage marks errors in the command line (exit code 2).
var errUsage = errors.New("usage")

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
