// Command publisher plays the agent side of briefd: it publishes history
// files as an agent would, reads and splices briefings, generates load, and
// runs the whole system in one process as a demo.
//
//	publisher demo     run NATS, the key-value store and a worker in-process; publish the example histories
//	publisher publish  publish a history file turn by turn, printing each step's latency
//	publisher latest   print a conversation's latest briefing
//	publisher splice   print a history file spliced with the latest briefing
//	publisher load     play N concurrent agents and summarize throughput and latencies
//	publisher nemesis  run servers and workers as processes, inject faults while agents publish, check the guarantees
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

	"github.com/briefd/briefd/internal/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: publisher <command> [flags]

commands:
  demo     run the whole system in one process and publish the example histories (no setup needed)
  publish  publish a history file turn by turn, as an agent would
  latest   print a conversation's latest briefing
  splice   print a history file spliced with the conversation's latest briefing
  load     play N concurrent agents from a folder of histories; summary of throughput and latencies
  nemesis  start nats-server, redis-server and workers as processes, kill, pause and restart them while
           agents publish, then check that no snapshot was lost, regressed or poisoned

Run 'publisher <command> -h' for the flags of a command.
`

// errUsage marks a command-line mistake: exit status 2.
var errUsage = errors.New("usage")

// usageErrorf returns an error matching errUsage.
func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// command is one subcommand.
type command interface {
	// Flags registers the command's flags on fs.
	Flags(fs *flag.FlagSet)
	// Run runs the command with the positional arguments left after the flags.
	Run(ctx context.Context, args []string, env *env) error
	// Synopsis is the usage line after "publisher".
	Synopsis() string
}

// env is what a command reads and writes besides its flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// Main runs the command line args and returns the process exit status:
// 0 on success, 1 on failure, 2 on a usage error.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, args := args[0], args[1:]
	var cmd command
	switch name {
	case "demo":
		cmd = &demoCmd{}
	case "publish":
		cmd = &publishCmd{}
	case "latest":
		cmd = &latestCmd{}
	case "splice":
		cmd = &spliceCmd{}
	case "load":
		cmd = &loadCmd{}
	case "nemesis":
		cmd = &nemesisCmd{}
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "publisher: unknown command %q\n\n%s", name, usage)
		return 2
	}
	fs := flag.NewFlagSet("publisher "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cmd.Flags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", "publisher "+name+" "+cmd.Synopsis())
	if err := envflag.Parse(fs, args, "BRIEFD_", nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		return 2
	}
	err := cmd.Run(ctx, fs.Args(), &env{stdin: stdin, stdout: stdout, stderr: stderr})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		fs.Usage()
		return 2
	default:
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		return 1
	}
}
