package main

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// --redis-cluster stores briefings in a Redis Cluster through the nodes
// --redis-url names; without it a conversation whose slot is on another
// node fails with MOVED.
func TestRedisClusterFlag(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	addrs := c.Addrs()
	url := fmt.Sprintf("redis://%s?addr=%s&addr=%s", addrs[0], addrs[1], addrs[2])
	_, js := natstest.Start(t).Connect(t)
	open := func(args ...string) briefingStore {
		t.Helper()
		fs := flag.NewFlagSet("worker run", flag.ContinueOnError)
		var f serviceFlags
		f.bind(fs)
		if err := fs.Parse(append([]string{"--redis-url", url}, args...)); err != nil {
			t.Fatal(err)
		}
		s, closeStore, err := openStore(t.Context(), &f, js, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeStore)
		return s
	}
	put := func(s briefingStore, i int) error {
		b := &briefd.Briefing{Tenant: "acme", ConversationID: fmt.Sprintf("c%d", i), BoundaryID: "m1", Position: 1,
			SnapshotSeq: 1, SnapshotTime: time.Now()}
		_, err := s.Put(t.Context(), b)
		return err
	}

	cluster := open("--redis-cluster")
	for i := range 20 {
		if err := put(cluster, i); err != nil {
			t.Fatalf("put c%d: %v", i, err)
		}
		if b, err := cluster.Latest(t.Context(), "acme", fmt.Sprintf("c%d", i)); err != nil || b.BoundaryID != "m1" {
			t.Fatalf("latest c%d: %v, %v", i, b, err)
		}
	}
	single := open("--redis-url", "redis://"+addrs[0])
	moved := 0
	for i := range 20 {
		if err := put(single, i); err != nil && strings.Contains(err.Error(), "MOVED") {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("a plain client stored every conversation: the cluster does not spread them")
	}
}

// --redis-user and --redis-password (BRIEFD_REDIS_USER and
// BRIEFD_REDIS_PASSWORD in the compose file) log in as an ACL user of
// deploy/redis/users.acl, on one server or a cluster; they override the
// URL's.
func TestRedisUserFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		user, pass string
	}{
		{"flags", []string{"--redis-url", "redis://h:6379/0", "--redis-user", "worker", "--redis-password", "pw"}, "worker", "pw"},
		{"url", []string{"--redis-url", "redis://u:p@h:6379/0"}, "u", "p"},
		{"flags over url", []string{"--redis-url", "redis://u:p@h:6379/0", "--redis-user", "worker", "--redis-password", "pw"}, "worker", "pw"},
		{"cluster", []string{"--redis-cluster", "--redis-url", "redis://h:6379", "--redis-user", "worker", "--redis-password", "pw"}, "worker", "pw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("worker run", flag.ContinueOnError)
			var f serviceFlags
			f.bind(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			rdb, err := f.redisClient()
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			var user, pass string
			switch c := rdb.(type) {
			case *redis.Client:
				user, pass = c.Options().Username, c.Options().Password
			case *redis.ClusterClient:
				user, pass = c.Options().Username, c.Options().Password
			}
			if user != tc.user || pass != tc.pass {
				t.Fatalf("logs in as %q with %q, want %q with %q", user, pass, tc.user, tc.pass)
			}
		})
	}
}
