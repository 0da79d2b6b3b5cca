package cache_test

import (
	"strings"
	"time"

	"github.com/briefd/briefd"
)

// briefing returns a briefing of about the size a worker writes (8 KB of
// text).
func briefing(tenant, conv, boundary string, pos int64) *briefd.Briefing {
	return &briefd.Briefing{
		ConversationID: conv,
		Tenant:         tenant,
		BoundaryID:     boundary,
		Position:       pos,
		Text:           strings.Repeat("The user asked for X; confirmed done: A, B. ", 180),
		Tier:           briefd.TierDeterministic,
		EngineVersion:  "test",
		InputHash:      "0f1e2d",
		TokensBefore:   40000,
		TokensAfter:    9000,
		CreatedAt:      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}
