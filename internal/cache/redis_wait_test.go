package cache_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/redistest"
)

// startReplicated starts a primary and one replica of it, and waits until
// the replica is in sync.
func startReplicated(t *testing.T) (primary, replica *redistest.Server) {
	t.Helper()
	// Without a delay the first sync starts at once (7.0 waits 5s).
	primary = redistest.StartWith(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(primary.Addr(), ":")
	replica = redistest.StartWith(t, "--replicaof", host, port)
	rdb := replica.Client(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rdb.Info(t.Context(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return primary, replica
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not in sync after 10s: %v\n%s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// monitor streams the server's MONITOR lines until the test ends.
func monitor(t *testing.T, addr string) <-chan string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.ReadString('\n'); err != nil || ok != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", ok, err)
	}
	lines := make(chan string, 10000)
	go func() {
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case lines <- l:
			case <-t.Context().Done():
				return
			}
		}
	}()
	return lines
}

// WAIT counts only the writes of the connection it is sent on, so Put sends
// it in one pipeline with its script: every WAIT the primary sees follows
// the script on the same connection, and once Put returns, the replica has
// the briefing. With the replica stalled, Put fails instead of returning a
// briefing only the primary holds.
func TestRedisPutWaitsForReplica(t *testing.T) {
	primary, replica := startReplicated(t)
	rdb, rrdb := primary.Client(t), replica.Client(t)
	ctx := t.Context()

	mon := monitor(t, primary.Addr())

	s := cache.NewRedisStore(rdb, cache.RedisConfig{WaitReplicas: 1, WaitTimeout: 2 * time.Second})
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			conv := fmt.Sprintf("c%d", i)
			if _, err := s.Put(ctx, briefing("t", conv, "m1", 1)); err != nil {
				errs <- err
				return
			}
			// WAIT returned 1: the replica has applied the write.
			if err := rrdb.HGet(ctx, "briefd:{t:"+conv+"}:latest", "boundary").Err(); err != nil {
				errs <- fmt.Errorf("%s on the replica right after Put: %w", conv, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// MONITOR lines: `+<time> [<db> <client addr>] "<command>" ...`.
	line := regexp.MustCompile(`^\+\S+ \[\d+ (\S+)\] "([a-zA-Z]+)"`)
	last := map[string]string{} // client addr -> its previous command
	waits := 0
	deadline := time.After(5 * time.Second)
	for waits < n {
		select {
		case l := <-mon:
			m := line.FindStringSubmatch(l)
			if m == nil || m[1] == "lua" {
				continue
			}
			cmd := strings.ToLower(m[2])
			if cmd == "wait" {
				waits++
				if prev := last[m[1]]; prev != "evalsha" && prev != "eval" {
					t.Errorf("WAIT on %s follows %q, not the script on the same connection", m[1], prev)
				}
			}
			last[m[1]] = cmd
		case <-deadline:
			t.Fatalf("MONITOR showed %d WAITs of %d", waits, n)
		}
	}

	replica.Pause(t)
	stalled := cache.NewRedisStore(rdb, cache.RedisConfig{WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond})
	_, err := stalled.Put(ctx, briefing("t", "stalled", "m1", 1))
	replica.Resume(t)
	if !errors.Is(err, cache.ErrNotDurable) {
		t.Fatalf("Put with the replica stalled: %v, want ErrNotDurable", err)
	}
	if _, err := s.Put(ctx, briefing("t", "stalled", "m1", 1)); err != nil {
		t.Fatalf("Put again once the replica is back: %v", err)
	}
}

// On a cluster the wait runs on the node that owns the conversation's slot
// (any other would answer MOVED to the script, or count other writes): with
// no replicas, every Put runs its script and then reports ErrNotDurable.
func TestRedisClusterPutWaits(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	s := cache.NewRedisStore(rdb, cache.RedisConfig{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	for i := range 6 {
		conv := fmt.Sprintf("c%d", i)
		if _, err := s.Put(t.Context(), briefing("t", conv, "m1", 1)); !errors.Is(err, cache.ErrNotDurable) {
			t.Fatalf("put %s: %v, want ErrNotDurable", conv, err)
		}
		if err := rdb.HGet(t.Context(), "briefd:{t:"+conv+"}:latest", "boundary").Err(); err != nil {
			t.Fatalf("%s: the script did not run: %v", conv, err)
		}
	}
}

// WAITAOF exists from Redis 7.2: a store that must wait for it says so, at
// start (the worker calls CheckWaitAOF) and in Ping, on an older server.
// On 7.2 or later it needs appendonly yes, and then Put waits.
func TestCheckWaitAOF(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	info, err := rdb.Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`redis_version:(\d+)\.(\d+)`).FindStringSubmatch(info)
	if version == nil {
		t.Fatalf("no redis_version in INFO:\n%s", info)
	}
	s := cache.NewRedisStore(rdb, cache.RedisConfig{WaitAOF: true})
	major, _ := strconv.Atoi(version[1])
	minor, _ := strconv.Atoi(version[2])
	if major < 7 || major == 7 && minor < 2 {
		err := s.CheckWaitAOF(t.Context())
		if !errors.Is(err, cache.ErrNoWaitAOF) || !strings.Contains(err.Error(), "7.2") || !strings.Contains(err.Error(), version[1]+"."+version[2]) {
			t.Fatalf("CheckWaitAOF on Redis %s.%s: %v, want ErrNoWaitAOF naming 7.2 and the version", version[1], version[2], err)
		}
		if err := s.Ping(t.Context()); !errors.Is(err, cache.ErrNoWaitAOF) {
			t.Fatalf("Ping on Redis %s.%s: %v, want ErrNoWaitAOF", version[1], version[2], err)
		}
		return
	}
	if err := s.CheckWaitAOF(t.Context()); !errors.Is(err, cache.ErrNoWaitAOF) {
		t.Fatalf("CheckWaitAOF without appendonly: %v, want ErrNoWaitAOF", err)
	}
	aof := redistest.StartWith(t, "--appendonly", "yes", "--appendfsync", "everysec")
	s = cache.NewRedisStore(aof.Client(t), cache.RedisConfig{WaitAOF: true})
	if err := s.CheckWaitAOF(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := s.Put(ctx, briefing("t", "c", "m1", 1)); err != nil {
		t.Fatalf("Put with WAITAOF: %v", err)
	}
}
