package cache_test

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/cache/cachetest"
	"github.com/briefd/briefd/internal/redistest"
)

// benchStores returns one store per implementation, on fresh servers.
func benchStores(b *testing.B) map[string]cachetest.Store {
	b.Helper()
	kv, err := cache.NewKVStore(b.Context(), newKV(b), cache.KVConfig{})
	if err != nil {
		b.Fatal(err)
	}
	return map[string]cachetest.Store{
		"redis": cache.NewRedisStore(redistest.Start(b).Client(b), cache.RedisConfig{}),
		"kv":    kv,
	}
}

// BenchmarkPut measures sequential Puts of 8 KB briefings, each moving the
// latest pointer of one conversation.
func BenchmarkPut(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			var pos int64
			for b.Loop() {
				pos++
				if _, err := s.Put(ctx, briefing("bench", "put", "m"+strconv.FormatInt(pos, 10), pos)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutStatus measures the status write the worker makes for every
// snapshot it handles (a skip included), next to Put's figure.
func BenchmarkPutStatus(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			var seq uint64
			for b.Loop() {
				seq++
				st := &briefd.Status{Tenant: "bench", ConversationID: "status", Seq: seq, Outcome: briefd.OutcomeSkipped,
					Reason: "below_trigger", Detail: "below trigger: 8213 tokens <= 83200 (0.65 x 128000)", Messages: 31,
					Tokens: 8213, TriggerTokens: 83200, At: time.Now()}
				if err := s.PutStatus(ctx, st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLatest measures the agent's read of the latest briefing.
func BenchmarkLatest(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			if _, err := s.Put(ctx, briefing("bench", "latest", "m1", 1)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Latest(ctx, "bench", "latest"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRace measures parallel writers racing on one conversation with
// random positions, and checks afterwards that the latest is the maximum.
func BenchmarkRace(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			conv := "race-" + strconv.FormatInt(time.Now().UnixNano(), 10)
			var maxPos atomic.Int64
			b.SetParallelism(4) // 4 writers per GOMAXPROCS
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
				for pb.Next() {
					pos := rng.Int64N(1 << 40)
					if _, err := s.Put(ctx, briefing("bench", conv, "m"+strconv.FormatInt(pos, 10), pos)); err != nil {
						b.Error(err)
						return
					}
					for cur := maxPos.Load(); pos > cur && !maxPos.CompareAndSwap(cur, pos); cur = maxPos.Load() {
					}
				}
			})
			got, err := s.Latest(ctx, "bench", conv)
			if err != nil {
				b.Fatal(err)
			}
			if got.Position != maxPos.Load() {
				b.Fatalf("latest position %d, want the maximum %d", got.Position, maxPos.Load())
			}
		})
	}
}
