package queue_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/briefd/briefd/internal/queue"
	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
)

// publishRawBody stores a body payload as any publisher could, bypassing
// the Go publisher's checks.
func publishRawBody(t *testing.T, b *bundle, conv, hash string, payload []byte, zstdEnc bool) {
	t.Helper()
	m := nats.NewMsg(fmt.Sprintf("briefd.body.acme.%s.%s", conv, hash))
	m.Header.Set(queue.HeaderVersion, "1")
	if zstdEnc {
		m.Header.Set(queue.HeaderContentEncoding, queue.EncodingZstd)
	}
	m.Data = payload
	if _, err := b.js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
}

func publishManifest(t *testing.T, b *bundle, conv string, entries []queue.Entry) (uint64, []byte) {
	t.Helper()
	man, _ := json.Marshal(queue.Manifest{V: 1, Tenant: "acme", ConversationID: conv, Seq: 1, Append: entries})
	ack, err := b.js.Publish(t.Context(), "briefd.snap.acme."+conv, man)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence, man
}

// A compression bomb is refused from the sizes its frames declare, before
// anything is decompressed: resolving it allocates a few megabytes, not the
// hundreds it would expand to.
func TestCompressionBomb(t *testing.T) {
	b := setup(t)
	enc, _ := zstd.NewWriter(nil)
	const bodySize = 12 << 20 // under the 16 MiB body limit; 24 of them pass the 256 MiB total
	filler := bytes.Repeat([]byte("a"), bodySize-64)
	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"m%d","role":"user","content":"%s"}`, i, filler)
	}
	// Twenty-four distinct bodies, and one body named twenty-four times.
	var distinct, repeated []queue.Entry
	for i := range 24 {
		canon := body(i)
		h := queue.BodyHash(canon)
		publishRawBody(t, b, "bomb", h, enc.EncodeAll(canon, nil), true)
		distinct = append(distinct, queue.Entry{ID: fmt.Sprintf("m%d", i), Hash: h})
		if i == 0 {
			publishRawBody(t, b, "repeat", h, enc.EncodeAll(canon, nil), true)
		}
		repeated = append(repeated, queue.Entry{ID: "m0", Hash: distinct[0].Hash})
	}
	// A frame that declares 600 bytes followed by a frame of 12 MB.
	small := fmt.Appendf(nil, `{"id":"m0","role":"user","content":"%s"}`, bytes.Repeat([]byte("x"), 560))
	hs := queue.BodyHash(small)
	publishRawBody(t, b, "trailer", hs, append(enc.EncodeAll(small, nil), enc.EncodeAll(body(0), nil)...), true)
	// A streamed frame, which declares no content size.
	var streamed bytes.Buffer
	w, _ := zstd.NewWriter(&streamed)
	w.Write(body(0))
	w.Close()
	publishRawBody(t, b, "nosize", distinct[0].Hash, streamed.Bytes(), true)
	filler = nil

	cases := []struct {
		conv    string
		entries []queue.Entry
	}{
		{"bomb", distinct},
		{"repeat", repeated},
		{"trailer", []queue.Entry{{ID: "m0", Hash: hs}}},
		{"nosize", []queue.Entry{{ID: "m0", Hash: distinct[0].Hash}}},
	}
	for _, tc := range cases {
		t.Run(tc.conv, func(t *testing.T) {
			seq, man := publishManifest(t, b, tc.conv, tc.entries)
			res := queue.NewResolver(b.js, b.cfg)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := res.Resolve(t.Context(), "briefd.snap.acme."+tc.conv, seq, man)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, queue.ErrMalformed) {
				t.Fatalf("Resolve = %v, want a malformed snapshot", err)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("rejected (%v) after allocating %.1f MB", err, float64(allocated)/(1<<20))
			if allocated > 64<<20 {
				t.Fatalf("allocated %.1f MB to reject a compression bomb, want under 64 MB", float64(allocated)/(1<<20))
			}
		})
	}
}
