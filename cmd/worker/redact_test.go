package main

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
)

// A malformed URL is reported without the password it carries: url.Parse
// quotes the whole URL in its error.
func TestRunRedactsURLSecrets(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"nats", []string{"run", "--nats-url", "nats://user:s3cret@ho st:4222", "--http-addr", ""}},
		{"redis", []string{"run", "--embedded", "--data-dir", filepath.Join(t.TempDir(), "js"), "--embedded-addr", "127.0.0.1:0",
			"--http-addr", "", "--redis-url", "redis://user:s3cret@ho st:6379/0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, "", tc.args...)
			if code == 0 {
				t.Fatalf("exit 0 for a malformed URL")
			}
			if strings.Contains(stderr, "s3cret") {
				t.Fatalf("the password is printed:\n%s", stderr)
			}
		})
	}
}

// The README tells operators to raise MaxAckPending to workers ×
// concurrency: the flag must exist and reach the queue configuration.
func TestMaxAckPendingFlag(t *testing.T) {
	fs := flag.NewFlagSet("worker run", flag.ContinueOnError)
	var f serviceFlags
	f.bind(fs)
	if err := fs.Parse([]string{"--max-ack-pending", "4096"}); err != nil {
		t.Fatal(err)
	}
	if f.queue.MaxAckPending != 4096 {
		t.Fatalf("MaxAckPending = %d, want 4096", f.queue.MaxAckPending)
	}
}

// --briefing-ttl (README: "Keys expire after --briefing-ttl") reaches the
// store.
func TestBriefingTTLFlag(t *testing.T) {
	fs := flag.NewFlagSet("worker run", flag.ContinueOnError)
	var f serviceFlags
	f.bind(fs)
	if err := fs.Parse([]string{"--briefing-ttl", "48h", "--store", "kv"}); err != nil {
		t.Fatal(err)
	}
	_, js := natstest.Start(t).Connect(t)
	if _, closeStore, err := openStore(t.Context(), &f, js, true); err != nil {
		t.Fatal(err)
	} else {
		closeStore()
	}
	kv, err := js.KeyValue(t.Context(), cache.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != 48*time.Hour {
		t.Fatalf("bucket TTL %s, want 48h", st.TTL())
	}
}
