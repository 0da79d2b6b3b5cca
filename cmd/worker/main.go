// Command worker is the briefd compaction worker and its offline tools.
//
//	worker [run]       consume snapshots from JetStream, compact, store briefings (the service)
//	worker compact     compact one history file and print the result as JSON
//	worker eval        the quality yardsticks over folders of histories (identifier recall, chained), probe packets and grades
//	worker replay      re-run the compaction of a stored snapshot and compare it with the stored briefing
//	worker rebuild     recompute every conversation's latest briefing from the stream (a store lost)
//	worker healthcheck probe a worker's /readyz (for container health checks)
//
// Every flag also reads a BRIEFD_* environment variable; flags win.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usage lists the subcommands; printed for -h and for an unknown command.
const usage = `usage: worker <command> [flags]

commands:
  run          consume snapshots, compact, store briefings (default)
  compact      compact one history file (or - for stdin) and print JSON
  eval         quality yardsticks over histories; probe-set packets and grades
  replay       re-run a stored snapshot's compaction and compare
  rebuild      recompute every conversation's latest briefing from the stream
  healthcheck  probe a worker's readiness endpoint
  version      print the engine version

Run 'worker <command> -h' for the flags of a command.
`

// Main runs the command line args and returns the process exit code, so
// tests can drive the command without a subprocess.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = runService(ctx, args, stdout, stderr)
	case "compact":
		err = runCompact(ctx, args, stdin, stdout, stderr)
	case "eval":
		err = runEval(ctx, args, stdout, stderr)
	case "replay":
		err = runReplay(ctx, args, stdout, stderr)
	case "rebuild":
		err = runRebuild(ctx, args, stdout, stderr)
	case "healthcheck":
		err = runHealthcheck(ctx, args, stdout, stderr)
	case "version":
		err = runVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "worker: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "worker %s: %v\n", cmd, err)
		return 2
	case errors.Is(err, errNotCompacted):
		return 3 // the result is on stdout; the status says nothing was compacted
	default:
		fmt.Fprintf(stderr, "worker %s: %v\n", cmd, err)
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
