package queue

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/briefd/briefd"
)

// Protocol constants of docs/protocol.md, version 1.
const (
	// Version is the protocol version this package speaks.
	Version = 1

	// HeaderVersion carries the protocol version ("1") on every message.
	HeaderVersion = "Briefd-Version"
	// HeaderContentType is "application/json" on bodies and manifests.
	HeaderContentType = "Content-Type"
	// HeaderContentEncoding is "zstd" when a body's payload is compressed;
	// absent means the payload is the canonical body bytes.
	HeaderContentEncoding = "Content-Encoding"
	// HeaderChunks, on a body's head message, is the number of chunk
	// messages that hold the payload (the head's own data is then empty).
	HeaderChunks = "Briefd-Chunks"
	// HeaderSize, on a chunked body's head, is the payload's total size.
	HeaderSize = "Briefd-Size"
	// HeaderMsgID is JetStream's de-duplication header.
	HeaderMsgID = "Nats-Msg-Id"

	// ContentTypeJSON is the content type of bodies and manifests.
	ContentTypeJSON = "application/json"
	// EncodingZstd is the only content encoding defined by version 1.
	EncodingZstd = "zstd"

	// MaxTokenLen is the longest tenant or conversation id.
	MaxTokenLen = 128
	// HashLen is the length of a body hash: base64url without padding of
	// 16 bytes.
	HashLen = 22
)

// ValidToken reports whether s can be used as a tenant or conversation id:
// 1 to 128 characters from [A-Za-z0-9_-]. Such ids are safe as one NATS
// subject token, so NATS permissions can confine an agent to its tenant.
func ValidToken(s string) bool {
	if len(s) == 0 || len(s) > MaxTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func checkIDs(tenant, conv string) error {
	if !ValidToken(tenant) {
		return fmt.Errorf("queue: tenant %q: %w", tenant, ErrInvalidToken)
	}
	if !ValidToken(conv) {
		return fmt.Errorf("queue: conversation %q: %w", conv, ErrInvalidToken)
	}
	return nil
}

// BodyHash returns the content address of canonical body bytes: base64url
// (no padding) of the first 16 bytes of their SHA-256.
func BodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func validHash(h string) bool {
	if len(h) != HashLen {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	return err == nil && len(b) == 16
}

// Subjects builds the subjects of one prefix.
type Subjects struct{ Prefix string }

// Body is the subject of a body: <prefix>.body.<tenant>.<conv>.<hash>.
func (s Subjects) Body(tenant, conv, hash string) string {
	return s.Prefix + ".body." + tenant + "." + conv + "." + hash
}

// Chunk is the subject of chunk n (from 0) of a body.
func (s Subjects) Chunk(tenant, conv, hash string, n int) string {
	return s.Body(tenant, conv, hash) + "." + strconv.Itoa(n)
}

// Snapshot is the subject of a conversation's manifests:
// <prefix>.snap.<tenant>.<conv>.
func (s Subjects) Snapshot(tenant, conv string) string {
	return s.Prefix + ".snap." + tenant + "." + conv
}

// Dead is the subject of a conversation's dead-letter records.
func (s Subjects) Dead(tenant, conv string) string {
	return s.Prefix + ".dead." + tenant + "." + conv
}

// Entry names one message of a snapshot's list: its id and body hash.
type Entry struct {
	ID   string `json:"id"`
	Hash string `json:"h"`
}

// Manifest is the JSON body of a snapshot message (schema
// docs/schema/snapshot.v1.json). The snapshot's message list is the first
// Keep entries of the base snapshot's list followed by Append.
type Manifest struct {
	V              int    `json:"v"`
	Tenant         string `json:"tenant"`
	ConversationID string `json:"conversation_id"`
	// Seq is the agent's snapshot number, increasing within a conversation.
	Seq uint64 `json:"seq"`
	// Base is the Seq of the snapshot this one extends, or 0 for a full
	// manifest. BaseStreamSeq is that snapshot's stream sequence in the
	// snapshot stream (from its publish ack), so a reader loads it with one
	// direct get.
	Base          uint64    `json:"base"`
	BaseStreamSeq uint64    `json:"base_stream_seq,omitempty"`
	Keep          int       `json:"keep"`
	Append        []Entry   `json:"append"`
	Model         string    `json:"model,omitempty"`
	ContextWindow int       `json:"context_window,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// Control is what the agent asks of this snapshot's compaction (when,
	// what to keep); nil leaves it to the workers' settings. It is not
	// inherited from the base snapshot.
	Control *briefd.Control `json:"control,omitempty"`
}

// DecodeManifest parses and checks a manifest; every failure wraps
// ErrMalformed with the reason.
func DecodeManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, malformed("manifest is not valid JSON: %v", err)
	}
	switch {
	case m.V != Version:
		return nil, malformed("manifest version %d, this worker speaks %d", m.V, Version)
	case !ValidToken(m.Tenant):
		return nil, malformed("manifest tenant %q is not a valid token", m.Tenant)
	case !ValidToken(m.ConversationID):
		return nil, malformed("manifest conversation_id %q is not a valid token", m.ConversationID)
	case m.Seq == 0:
		return nil, malformed("manifest seq must be > 0")
	case m.Base >= m.Seq:
		return nil, malformed("manifest base %d is not before seq %d", m.Base, m.Seq)
	case m.Base == 0 && m.Keep != 0:
		return nil, malformed("full manifest (base 0) with keep %d", m.Keep)
	case m.Base != 0 && m.BaseStreamSeq == 0:
		return nil, malformed("manifest base %d without base_stream_seq", m.Base)
	case m.Keep < 0:
		return nil, malformed("manifest keep %d < 0", m.Keep)
	case m.ContextWindow < 0:
		return nil, malformed("manifest context_window %d < 0", m.ContextWindow)
	}
	if m.Control != nil {
		if err := m.Control.Validate(); err != nil {
			return nil, malformed("manifest control: %v", err)
		}
	}
	for i, e := range m.Append {
		if e.ID == "" {
			return nil, malformed("manifest append[%d] has an empty id", i)
		}
		if !validHash(e.Hash) {
			return nil, malformed("manifest append[%d] (%q) has an invalid hash %q", i, e.ID, e.Hash)
		}
	}
	return &m, nil
}
