package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrNotDurable is the error of a Put whose briefing was written but not
// acknowledged by as many append-only files or replicas as configured
// within the wait timeout. Retrying the Put is safe.
var ErrNotDurable = errors.New("cache: briefing not acknowledged as durable in time")

// ErrNoWaitAOF is the error of CheckWaitAOF when the server cannot
// WAITAOF: it is older than Redis 7.2 or has no append-only file.
var ErrNoWaitAOF = errors.New("cache: the Redis server cannot WAITAOF")

// runPut runs putScript and returns its reply. When Put must wait for
// durability, the wait (WAITAOF, or WAIT) goes in one pipeline with the
// script: both count only the writes made on their own connection, so a
// wait sent on another pooled connection would return at once, whatever
// became of the briefing.
func (s *RedisStore) runPut(ctx context.Context, keys []string, args ...any) (int64, error) {
	if !s.waitAOF && s.waitReplicas <= 0 {
		return putScript.Run(ctx, s.rdb, keys, args...).Int64()
	}
	// A cluster client would send the keyless wait to any node: pipeline
	// on the client of the node that owns the conversation's slot.
	node := redis.Cmdable(s.rdb)
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		c, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return 0, fmt.Errorf("find the node of %s: %w", keys[0], err)
		}
		node = c
	}
	n, err := s.putAndWait(ctx, node, putScript.EvalSha, keys, args)
	if errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
		n, err = s.putAndWait(ctx, node, putScript.Eval, keys, args)
	}
	return n, err
}

// putAndWait pipelines the script (by eval) and the wait on one
// connection, and checks the wait's count.
func (s *RedisStore) putAndWait(ctx context.Context, node redis.Cmdable,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd, keys []string, args []any) (int64, error) {
	var put, wait *redis.Cmd
	timeout := s.waitTimeout.Milliseconds()
	// Pipelined returns the first command's error; each is read below.
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		put = eval(ctx, p, keys, args...)
		if s.waitAOF {
			wait = p.Do(ctx, "WAITAOF", 1, s.waitReplicas, timeout)
		} else {
			wait = p.Do(ctx, "WAIT", s.waitReplicas, timeout)
		}
		return nil
	})
	n, err := put.Int64()
	if err != nil {
		return 0, err
	}
	if s.waitAOF {
		acks, err := wait.Int64Slice()
		if err != nil {
			return 0, fmt.Errorf("WAITAOF: %w", err)
		}
		if len(acks) != 2 || acks[0] < 1 || acks[1] < int64(s.waitReplicas) {
			return 0, fmt.Errorf("%w: WAITAOF after %v: fsynced locally and by replicas %v, want 1 and %d",
				ErrNotDurable, s.waitTimeout, acks, s.waitReplicas)
		}
		return n, nil
	}
	acks, err := wait.Int64()
	if err != nil {
		return 0, fmt.Errorf("WAIT: %w", err)
	}
	if acks < int64(s.waitReplicas) {
		return 0, fmt.Errorf("%w: WAIT after %v: %d of %d replicas", ErrNotDurable, s.waitTimeout, acks, s.waitReplicas)
	}
	return n, nil
}

// CheckWaitAOF reports whether every server the store writes to can
// WAITAOF: Redis 7.2 or later, with appendonly yes. Its error wraps
// ErrNoWaitAOF when one cannot, and is the client's error when a server
// does not answer. It needs INFO and CONFIG GET (see deploy/redis/users.acl).
func (s *RedisStore) CheckWaitAOF(ctx context.Context) error {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return checkWaitAOF(ctx, c)
		})
	}
	return checkWaitAOF(ctx, s.rdb)
}

func checkWaitAOF(ctx context.Context, c redis.Cmdable) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("cache: read the Redis server's version: %w", err)
	}
	version := infoField(info, "redis_version")
	if !atLeast(version, 7, 2) {
		return fmt.Errorf("%w: it runs Redis %q, WAITAOF needs 7.2 or later", ErrNoWaitAOF, version)
	}
	aof, err := c.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return fmt.Errorf("cache: read the Redis server's appendonly setting: %w", err)
	}
	if aof["appendonly"] != "yes" {
		return fmt.Errorf("%w: it runs without appendonly yes", ErrNoWaitAOF)
	}
	return nil
}

// infoField returns a field of an INFO reply, or "".
func infoField(info, name string) string {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), name+":"); ok {
			return v
		}
	}
	return ""
}

// atLeast reports whether a version "major.minor.patch" is at least
// major.minor; an unreadable version is not.
func atLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
