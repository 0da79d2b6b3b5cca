package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
)

// BenchmarkDurability measures what "loses nothing" costs: publishing
// snapshots (a 2 KB body and a manifest per turn, as the Go publisher
// does) to R1 streams on one server with the default sync (fsync every 2
// minutes) against R3 streams on a 3-node cluster with sync_interval:
// always. Both run the nats-server version go.mod pins, built once, as
// separate processes. Run:
//
//	go test ./bench -run '^$' -bench Durability -benchtime 3000x
func BenchmarkDurability(b *testing.B) {
	bin := natstest.BuildBinary(b)
	setups := []struct {
		name     string
		replicas int
		start    func(b *testing.B) jetstream.JetStream
	}{
		{"R1-default-sync", 1, func(b *testing.B) jetstream.JetStream {
			_, js := natstest.StartProcess(b, bin, natstest.ProcessOptions{}).Connect(b)
			return js
		}},
		{"R3-sync-always", 3, func(b *testing.B) jetstream.JetStream {
			_, js := natstest.StartCluster(b, bin, 3, natstest.ProcessOptions{JetStream: "sync_interval: always"}).Connect(b)
			return js
		}},
	}
	body := make([]byte, 2048)
	for i := range body {
		body[i] = "abcdefghijklmnop "[rand.IntN(17)]
	}
	for _, s := range setups {
		b.Run(s.name, func(b *testing.B) {
			js := s.start(b)
			cfg := queue.Config{Replicas: s.replicas}
			if err := queue.EnsureStreams(b.Context(), js, cfg); err != nil {
				b.Fatal(err)
			}
			b.Run("sync", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := js.Publish(b.Context(), fmt.Sprintf("briefd.body.acme.c%d.h%d", i%100, i), body); err != nil {
						b.Fatal(err)
					}
					if _, err := js.Publish(b.Context(), fmt.Sprintf("briefd.snap.acme.c%d", i%100), body[:300]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
			})
			b.Run("async", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := js.PublishAsync(fmt.Sprintf("briefd.body.acme.a%d.h%d", i%100, i), body); err != nil {
						b.Fatal(err)
					}
					if _, err := js.PublishAsync(fmt.Sprintf("briefd.snap.acme.a%d", i%100), body[:300]); err != nil {
						b.Fatal(err)
					}
				}
				<-js.PublishAsyncComplete()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
			})
		})
	}
}
