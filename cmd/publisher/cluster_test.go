package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/redistest"
)

// publisher latest --redis-cluster reads a briefing from a Redis Cluster,
// wherever its conversation's slot lives.
func TestLatestFromRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	store := cache.NewRedisStore(c.Client(t), cache.RedisConfig{})
	addrs := c.Addrs()
	url := fmt.Sprintf("redis://%s?addr=%s&addr=%s", addrs[0], addrs[1], addrs[2])
	srv := natstest.Start(t)
	for i := range 6 {
		conv := fmt.Sprintf("c%d", i)
		b := &briefd.Briefing{Tenant: "acme", ConversationID: conv, BoundaryID: "m7", Position: 6, Text: "briefing of " + conv,
			SnapshotSeq: 1, SnapshotTime: time.Now(), EngineVersion: "test"}
		if _, err := store.Put(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, "latest", "--nats-url", srv.URL(), "--redis-url", url, "--redis-cluster",
			"--tenant", "acme", "--conversation", conv, "--format", "json")
		if code != 0 || !strings.Contains(out, "briefing of "+conv) {
			t.Fatalf("latest %s: exit %d\n%s\n%s", conv, code, out, errOut)
		}
	}
}
