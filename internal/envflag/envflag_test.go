package envflag_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/briefd/briefd/internal/envflag"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    int
		wantURL string
		wantErr string
	}{
		{name: "default", want: 10, wantURL: "x"},
		{name: "env", env: map[string]string{"BRIEFD_CONTEXT_WINDOW": "2000", "BRIEFD_NATS_URL": "y"}, want: 2000, wantURL: "y"},
		{name: "flag wins", args: []string{"-context-window", "5"}, env: map[string]string{"BRIEFD_CONTEXT_WINDOW": "2000"}, want: 5, wantURL: "x"},
		{name: "bad env", env: map[string]string{"BRIEFD_CONTEXT_WINDOW": "lots"}, wantErr: "BRIEFD_CONTEXT_WINDOW"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			n := fs.Int("context-window", 10, "")
			u := fs.String("nats-url", "x", "")
			err := envflag.Parse(fs, tt.args, "BRIEFD_", func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *n != tt.want || *u != tt.wantURL {
				t.Fatalf("got %d %q, want %d %q", *n, *u, tt.want, tt.wantURL)
			}
		})
	}
}
