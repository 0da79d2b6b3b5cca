package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
)

// expandCmd prints original messages of a conversation, read from the
// streams.
type expandCmd struct {
	conn         connFlags
	conversation string
	from, to     string
	limits       client.ExpandLimits
	format       string
}

// Summary says what the command does.
func (c *expandCmd) Summary() string {
	return "Print original messages of a conversation, by id range, read from the streams (compacted ones included)."
}

func (c *expandCmd) Synopsis() string { return "--conversation C --from ID [--to ID] [flags]" }

func (c *expandCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (required)")
	fs.StringVar(&c.from, "from", "", "id of the first message (required)")
	fs.StringVar(&c.to, "to", "", "id of the last message, inclusive (default --from)")
	fs.IntVar(&c.limits.MaxMessages, "max-messages", 0, fmt.Sprintf("most messages printed (default %d)", client.DefaultExpandMaxMessages))
	fs.IntVar(&c.limits.MaxBytes, "max-bytes", 0, fmt.Sprintf("most bytes of message text printed (default %d)", client.DefaultExpandMaxBytes))
	fs.StringVar(&c.format, "format", "text", "output: text, or json (the messages as a JSON array)")
}

func (c *expandCmd) Run(ctx context.Context, args []string, e *env) error {
	if c.conversation == "" || c.from == "" || len(args) != 0 {
		return usageErrorf("--conversation and --from are required and no arguments are taken")
	}
	if c.format != "text" && c.format != "json" {
		return usageErrorf("--format must be text or json, not %q", c.format)
	}
	s, err := c.conn.open(ctx, e, client.WithExpandLimits(c.limits))
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))
	ex, err := s.c.Expand(ctx, c.conversation, c.from, c.to)
	var expired *client.ExpiredError
	if err != nil && !errors.As(err, &expired) {
		return err
	}
	if c.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ex.Messages); err != nil {
			return err
		}
	} else {
		for _, m := range ex.Messages {
			printMessage(e, m)
		}
	}
	if ex.NextID != "" {
		fmt.Fprintf(e.stderr, "publisher expand: cut at %d messages; go on with --from %s\n", len(ex.Messages), ex.NextID)
	} else if ex.Truncated {
		fmt.Fprintf(e.stderr, "publisher expand: a message was clipped to --max-bytes\n")
	}
	if expired != nil {
		return expired
	}
	return nil
}

// printMessage prints one message as text: a header line, then its
// content and tool calls.
func printMessage(e *env, m briefd.Message) {
	head := fmt.Sprintf("[%s] %s", m.ID, m.Role)
	if m.ToolCallID != "" {
		head += " (result of " + m.ToolCallID + ")"
	}
	fmt.Fprintln(e.stdout, head)
	if text := m.Content.String(); text != "" {
		fmt.Fprintln(e.stdout, indent(text))
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(e.stdout, "  → %s %s(%s)\n", tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	fmt.Fprintln(e.stdout)
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// searchCmd searches the originals of a conversation.
type searchCmd struct {
	conn         connFlags
	conversation string
	regexp, all  bool
	limits       client.ExpandLimits
	format       string
}

// Summary says what the command does.
func (c *searchCmd) Summary() string {
	return "Search the compacted messages of a conversation (substring or regexp), with their ids."
}

func (c *searchCmd) Synopsis() string { return "--conversation C [flags] QUERY" }

func (c *searchCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (required)")
	fs.BoolVar(&c.regexp, "regexp", false, "QUERY is a regular expression (RE2 syntax); default: a case-insensitive substring")
	fs.BoolVar(&c.all, "all", false, "search every stored message, not only those the latest briefing compacted")
	fs.IntVar(&c.limits.MaxMatches, "max-matches", 0, fmt.Sprintf("most matching messages printed (default %d)", client.DefaultSearchMaxMatches))
	fs.StringVar(&c.format, "format", "text", "output: text, or json (the matches as a JSON array)")
}

func (c *searchCmd) Run(ctx context.Context, args []string, e *env) error {
	if c.conversation == "" || len(args) != 1 {
		return usageErrorf("--conversation and one QUERY are required")
	}
	if c.format != "text" && c.format != "json" {
		return usageErrorf("--format must be text or json, not %q", c.format)
	}
	s, err := c.conn.open(ctx, e, client.WithExpandLimits(c.limits))
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))
	var opts []client.SearchOption
	if c.regexp {
		opts = append(opts, client.SearchRegexp())
	}
	if c.all {
		opts = append(opts, client.SearchAll())
	}
	res, err := s.c.Search(ctx, c.conversation, args[0], opts...)
	if errors.Is(err, client.ErrNoBriefing) {
		return fmt.Errorf("%w: nothing compacted yet (--all searches every stored message)", err)
	}
	if err != nil {
		return err
	}
	if c.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if res.Matches == nil {
			res.Matches = []client.SearchMatch{}
		}
		if err := enc.Encode(res.Matches); err != nil {
			return err
		}
	} else {
		for _, m := range res.Matches {
			fmt.Fprintf(e.stdout, "[%s] %s (%d)\n%s\n\n", m.ID, m.Role, m.Count, indent(m.Snippet))
		}
	}
	fmt.Fprintf(e.stderr, "publisher search: %d messages searched, %d shown", res.Searched, len(res.Matches))
	if res.Truncated {
		fmt.Fprint(e.stderr, ", more matched (--max-matches)")
	}
	if len(res.Expired) > 0 {
		fmt.Fprintf(e.stderr, "; %d expired and not searched", len(res.Expired))
	}
	fmt.Fprintln(e.stderr)
	return nil
}

// toolCmd answers an expand tool call as an agent's handler would, or
// prints the tool's definition: what the model is given and gets back.
type toolCmd struct {
	conn         connFlags
	conversation string
	definition   bool
	limits       client.ExpandLimits
}

// Summary says what the command does.
func (c *toolCmd) Summary() string {
	return "Answer an expand_history tool call as an agent's handler would, or print the tool's definition."
}

func (c *toolCmd) Synopsis() string {
	return "--conversation C [flags] 'ARGUMENTS' | --definition"
}

func (c *toolCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (required with ARGUMENTS)")
	fs.BoolVar(&c.definition, "definition", false, "print the "+briefd.ExpandToolName+" tool's definition (OpenAI function JSON) and exit")
	fs.IntVar(&c.limits.MaxMessages, "max-messages", 0, fmt.Sprintf("most messages per answer (default %d)", client.DefaultExpandMaxMessages))
	fs.IntVar(&c.limits.MaxBytes, "max-bytes", 0, fmt.Sprintf("most bytes of text per answer (default %d)", client.DefaultExpandMaxBytes))
	fs.IntVar(&c.limits.MaxMatches, "max-matches", 0, fmt.Sprintf("most matching messages per answer (default %d)", client.DefaultSearchMaxMatches))
}

func (c *toolCmd) Run(ctx context.Context, args []string, e *env) error {
	if c.definition {
		if len(args) != 0 {
			return usageErrorf("--definition takes no arguments")
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(client.ExpandTool())
	}
	if c.conversation == "" || len(args) != 1 {
		return usageErrorf("--conversation and one ARGUMENTS (the call's JSON, e.g. '{\"from_id\":\"m3\",\"to_id\":\"m9\"}') are required")
	}
	s, err := c.conn.open(ctx, e, client.WithExpandLimits(c.limits))
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))
	out, err := s.c.HandleExpandTool(ctx, c.conversation, args[0])
	fmt.Fprintln(e.stdout, out)
	return err
}
