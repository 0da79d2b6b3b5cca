package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"github.com/briefd/briefd/internal/redact"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// connFlags are the connection flags shared by the commands that talk to a
// running system.
type connFlags struct {
	natsURL       string
	natsCreds     string
	natsUser      string
	natsPassword  string
	inboxPrefix   string
	redisURL      string
	redisUser     string
	redisPassword string
	redisCluster  bool
	tenant        string
	prefix        string
	verbose       bool
}

func (f *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.natsURL, "nats-url", nats.DefaultURL, "NATS server URL(s), comma-separated")
	fs.StringVar(&f.natsCreds, "nats-creds", "", "NATS credentials file (optional)")
	fs.StringVar(&f.natsUser, "nats-user", "", "NATS user (optional; the password from BRIEFD_NATS_PASSWORD)")
	fs.StringVar(&f.natsPassword, "nats-password", "", "NATS password; prefer the environment variable")
	fs.StringVar(&f.inboxPrefix, "nats-inbox-prefix", "", "inbox prefix for replies, when the NATS user may only subscribe to its own (deploy/nats.conf: _INBOX_<tenant>)")
	fs.StringVar(&f.redisURL, "redis-url", "", "Redis URL of the briefing store (redis://host:port/0); empty: the JetStream key-value bucket")
	fs.StringVar(&f.redisUser, "redis-user", "", "Redis ACL user (deploy/redis/users.acl: one per tenant); overrides the URL's")
	fs.StringVar(&f.redisPassword, "redis-password", "", "Redis password; prefer the environment variable BRIEFD_REDIS_PASSWORD")
	fs.BoolVar(&f.redisCluster, "redis-cluster", false, "Redis is a cluster: --redis-url names one or more of its nodes (redis://host1:6379?addr=host2:6379)")
	fs.StringVar(&f.tenant, "tenant", client.DefaultTenant, "tenant id")
	fs.StringVar(&f.prefix, "prefix", "", "subject and key prefix (default briefd)")
	fs.BoolVar(&f.verbose, "verbose", false, "log at debug level on stderr")
}

// session is an open connection and a client on it.
type session struct {
	nc  *nats.Conn
	rdb redis.UniversalClient
	c   *client.Client
}

func (f *connFlags) open(ctx context.Context, e *env, extra ...client.Option) (*session, error) {
	opts := []nats.Option{nats.Name("briefd-publisher"), nats.Timeout(5 * time.Second)}
	if f.natsCreds != "" {
		opts = append(opts, nats.UserCredentials(f.natsCreds))
	}
	if f.natsUser != "" {
		opts = append(opts, nats.UserInfo(f.natsUser, f.natsPassword))
	}
	if f.inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(f.inboxPrefix))
	}
	nc, err := nats.Connect(f.natsURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %s (is a server running? 'publisher demo' needs none)", redact.URLs(f.natsURL), redact.Error(err, f.natsURL))
	}
	s := &session{nc: nc}
	copts := []client.Option{client.WithTenant(f.tenant), client.WithLogger(logger(e, f.verbose))}
	if f.prefix != "" {
		copts = append(copts, client.WithPrefix(f.prefix))
	}
	if f.redisURL != "" {
		var addr string
		if f.redisCluster {
			co, err := redis.ParseClusterURL(f.redisURL)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("redis url: %s", redact.Error(err, f.redisURL))
			}
			co.Username, co.Password = cmp.Or(f.redisUser, co.Username), cmp.Or(f.redisPassword, co.Password)
			s.rdb, addr = redis.NewClusterClient(co), strings.Join(co.Addrs, ",")
		} else {
			ro, err := redis.ParseURL(f.redisURL)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("redis url: %s", redact.Error(err, f.redisURL))
			}
			ro.Username, ro.Password = cmp.Or(f.redisUser, ro.Username), cmp.Or(f.redisPassword, ro.Password)
			s.rdb, addr = redis.NewClient(ro), ro.Addr
		}
		if err := s.rdb.Ping(ctx).Err(); err != nil {
			s.close(ctx)
			return nil, fmt.Errorf("connect to Redis at %s: %w", addr, err)
		}
		copts = append(copts, client.WithRedis(s.rdb))
	}
	s.c, err = client.New(nc, append(copts, extra...)...)
	if err != nil {
		s.close(ctx)
		return nil, err
	}
	return s, nil
}

// close closes the client (flushing up to ctx), then the connections.
func (s *session) close(ctx context.Context) error {
	var err error
	if s.c != nil {
		err = s.c.Close(ctx)
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
	s.nc.Close()
	return err
}

func logger(e *env, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// readHistory reads a history file ("-" for stdin).
func readHistory(e *env, path string) (*briefd.History, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// convID turns a history id into a valid conversation id: characters
// outside [A-Za-z0-9_-] become '-'.
func convID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	if len(b) == 0 {
		return "conversation"
	}
	return string(b)
}

// steps returns the prefix lengths at which an agent publishes: before
// each assistant message (the previous turn and its tool results are
// complete), and the whole history. Each step adds one assistant turn with
// its tool results.
func steps(msgs []briefd.Message) []int {
	var out []int
	for k := 1; k < len(msgs); k++ {
		if msgs[k].Role == briefd.RoleAssistant {
			out = append(out, k)
		}
	}
	if len(msgs) > 0 {
		out = append(out, len(msgs))
	}
	return out
}
