// Package envflag lets every command-line flag be set from the environment.
//
// A flag named "context-window" reads BRIEFD_CONTEXT_WINDOW (prefix, upper
// case, '-' and '.' as '_'). A flag given on the command line wins over the
// environment, which wins over the flag's default.
package envflag

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// Name returns the environment variable that sets the flag name.
func Name(prefix, name string) string {
	return prefix + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(name))
}

// Parse parses args into fs, then sets every flag that args did not set from
// its environment variable, when that is present. lookup is os.LookupEnv in
// production and a map in tests.
func Parse(fs *flag.FlagSet, args []string, prefix string, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		env := Name(prefix, f.Name)
		v, ok := lookup(env)
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s=%q: %w", env, v, e)
		}
	})
	return err
}

// Usage returns a flag.FlagSet Usage function: summary (what the command
// does, in one line), the synopsis, then each flag with its environment
// variable.
func Usage(fs *flag.FlagSet, prefix, summary, synopsis string) func() {
	return func() {
		out := fs.Output()
		fmt.Fprintf(out, "%s\n\nusage: %s\n\nflags (each also read from the environment variable shown):\n", summary, synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(out, "  -%s %s\t[%s]\n    \t%s", f.Name, name, Name(prefix, f.Name), usage)
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" && f.DefValue != "[]" {
				fmt.Fprintf(out, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(out)
		})
	}
}
