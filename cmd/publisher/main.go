// Command publisher plays the agent side of briefd: it publishes history
// files as an agent would, reads and splices briefings, generates load, and
// runs the whole system in one process as a demo.
//
//	publisher demo     run NATS, the key-value store and a worker in-process; publish the example histories
//	publisher publish  publish a history file turn by turn, printing each step's latency
//	publisher latest   print a conversation's latest briefing
//	publisher status   print the workers' verdict on a conversation's newest snapshot
//	publisher splice   print a history file spliced with the latest briefing
//	publisher expand   print original messages of a conversation, read from the streams
//	publisher search   search the compacted messages of a conversation
//	publisher tool     answer an expand_history tool call as an agent would, or print the tool's definition
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
	"strings"
	"syscall"

	"github.com/briefd/briefd/internal/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// commands lists the subcommands in the order usage shows them.
var commands = []struct {
	name string
	make func() command
}{
	{"demo", func() command { return &demoCmd{} }},
	{"publish", func() command { return &publishCmd{} }},
	{"latest", func() command { return &latestCmd{} }},
	{"status", func() command { return &statusCmd{} }},
	{"splice", func() command { return &spliceCmd{} }},
	{"expand", func() command { return &expandCmd{} }},
	{"search", func() command { return &searchCmd{} }},
	{"tool", func() command { return &toolCmd{} }},
	{"load", func() command { return &loadCmd{} }},
	{"nemesis", func() command { return &nemesisCmd{} }},
}

// usage lists the subcommands; printed for a bare "publisher", -h and an
// unknown command.
func usage() string {
	var b strings.Builder
	b.WriteString("publisher: the agent side of briefd, from the command line.\n\nusage: publisher <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.make().Summary())
	}
	b.WriteString("\nStart with 'publisher demo' (no servers needed). Run 'publisher <command> -h' for the flags of a command.\n")
	return b.String()
}

// errUsage marks a command-line mistake: exit status 2.
var errUsage = errors.New("usage")

// errNotCompacted marks a publish whose snapshot the workers did not
// compact (exit status 3): the history is below the trigger, say. Its
// message says why.
var errNotCompacted = errors.New("not compacted")

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
	// Summary says what the command does, in one line: the first line
	// of its -h.
	Summary() string
}

// env is what a command reads and writes besides its flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// Main runs the command line args and returns the process exit status:
// 0 on success, 1 on failure, 2 on a usage error (a bare "publisher"
// included), 3 when publish --wait got the verdict "not compacted".
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name, args := args[0], args[1:]
	var cmd command
	for _, c := range commands {
		if c.name == name {
			cmd = c.make()
		}
	}
	switch {
	case cmd != nil:
	case name == "help" || name == "-h" || name == "--help" || name == "-help":
		fmt.Fprint(stdout, usage())
		return 0
	default:
		fmt.Fprintf(stderr, "publisher: unknown command %q\n\n%s", name, usage())
		return 2
	}
	fs := flag.NewFlagSet("publisher "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cmd.Flags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", cmd.Summary(), "publisher "+name+" "+cmd.Synopsis())
	err := envflag.Parse(fs, args, "BRIEFD_", nil)
	// Flags may follow the positional arguments too: publish FILE --wait 0.
	var positional []string
	for err == nil && fs.NArg() > 0 {
		rest := fs.Args()
		positional = append(positional, rest[0])
		if rest[0] == "--" {
			positional = append(positional[:len(positional)-1], rest[1:]...)
			break
		}
		err = fs.Parse(rest[1:])
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		return 2
	}
	err = cmd.Run(ctx, positional, &env{stdin: stdin, stdout: stdout, stderr: stderr})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		fs.Usage()
		return 2
	case errors.Is(err, errNotCompacted):
		// Published, and the workers' verdict is printed: not compacted.
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		return 3
	default:
		fmt.Fprintf(stderr, "publisher %s: %v\n", name, err)
		return 1
	}
}
