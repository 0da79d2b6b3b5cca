package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/briefd/briefd/internal/worker"
)

// The quick start of docker-compose.yml, run without Docker: a NATS server
// with deploy/nats.conf (tenant users), Redis with deploy/redis/users.acl
// (tenant users), a worker as the worker user of both with the compose
// file's Redis user, and the publisher with the compose file's own
// environment and the command its header gives. It must print a briefing,
// so the compose quick start yields one (or says why not).
func TestComposeQuickStart(t *testing.T) {
	t.Setenv("BRIEFD_NATS_WORKER_PASSWORD", "w-secret")
	t.Setenv("BRIEFD_NATS_ACME_PASSWORD", "a-secret")
	t.Setenv("BRIEFD_REDIS_WORKER_PASSWORD", "w0secret")
	t.Setenv("BRIEFD_REDIS_ACME_PASSWORD", "a0secret")
	opts, err := server.ProcessConfigFile("../../deploy/nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, t.TempDir(), true, true
	opts.SyncAlways = false // the test checks the settings, not the disks
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	rs := redistest.StartWithACL(t, "../../deploy/redis/acl.sh", "../../deploy/redis/users.acl")

	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// env returns a service's environment with ${VAR} references resolved.
	ref := regexp.MustCompile(`^\$\{([A-Z0-9_]+)(:-|:\?)?[^}]*\}$`)
	env := func(service string) map[string]string {
		out := map[string]string{}
		for k, v := range doc.Services[service].Environment {
			if m := ref.FindStringSubmatch(v); m != nil {
				v = os.Getenv(m[1])
			}
			out[k] = v
		}
		return out
	}

	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("worker", "w-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	wenv := env("worker")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), Username: wenv["BRIEFD_REDIS_USER"], Password: wenv["BRIEFD_REDIS_PASSWORD"]})
	t.Cleanup(func() { rdb.Close() })
	w, err := worker.New(js, cache.NewRedisStore(rdb, cache.RedisConfig{}), worker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The worker user may write every bucket the worker writes: a put it is
	// not allowed waits for an acknowledgement that never comes, which
	// shows only when a snapshot is deferred.
	for _, bucket := range []string{queue.Config{}.WithDefaults().Streams().Requeues} { // the briefings live in Redis here
		kv, err := js.KeyValue(t.Context(), bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, err = kv.Put(ctx, "compose-test", []byte("{}"))
		cancel()
		if err != nil {
			t.Fatalf("deploy/nats.conf: the worker user cannot write bucket %s: %v", bucket, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Stop(ctx)
	})

	for k, v := range env("publisher") {
		switch k {
		case "BRIEFD_NATS_URL":
			v = srv.ClientURL()
		case "BRIEFD_REDIS_URL":
			v = "redis://" + rs.Addr() + "/0"
		}
		t.Setenv(k, v)
	}
	cmd := regexp.MustCompile(`(?m)^#\s+docker compose run --rm publisher (.+)$`).FindStringSubmatch(string(data))
	if cmd == nil {
		t.Fatal("docker-compose.yml's header gives no publisher command")
	}
	args := strings.Fields(strings.ReplaceAll(cmd[1], "/examples/", "../../examples/histories/"))
	code, out, errOut := run(t, args...)
	if code != 0 || !strings.Contains(out, "briefing tau-bench-2@") {
		t.Fatalf("the compose quick start (%s): exit %d\nstdout:\n%s\nstderr:\n%s", cmd[1], code, out, errOut)
	}
}
