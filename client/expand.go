package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
	"golang.org/x/sync/errgroup"
)

// Defaults of ExpandLimits: what one Expand or Search answer may hold, so
// that an expand tool call cannot flood the model's context.
const (
	DefaultExpandMaxMessages = 50
	DefaultExpandMaxBytes    = 32 << 10
	DefaultSearchMaxMatches  = 20
	// MaxQueryLength bounds a search query or pattern, in bytes.
	MaxQueryLength = 1024
	// snippetContext is how many characters a search snippet shows on each
	// side of the match; snippetMatch how many of the match itself.
	snippetContext = 80
	snippetMatch   = 120
	// fetchAhead is how many bodies are fetched at once.
	fetchAhead = 8
)

// ExpandLimits bound the answers of Expand, Search and HandleExpandTool.
// A zero field takes its default.
type ExpandLimits struct {
	// MaxMessages is the most messages one Expand returns. Default 50.
	MaxMessages int
	// MaxBytes bounds the text one answer carries: the messages' sizes
	// (briefd.Message.Size: content, tool call names and arguments) for
	// Expand, the snippets for Search. A first message larger than it is
	// clipped. Default 32 KiB.
	MaxBytes int
	// MaxMatches is the most messages one Search returns. Default 20.
	MaxMatches int
}

func (l ExpandLimits) withDefaults() ExpandLimits {
	if l.MaxMessages <= 0 {
		l.MaxMessages = DefaultExpandMaxMessages
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultExpandMaxBytes
	}
	if l.MaxMatches <= 0 {
		l.MaxMatches = DefaultSearchMaxMatches
	}
	return l
}

// WithExpandLimits sets the bounds of Expand, Search and the expand tool's
// answers.
func WithExpandLimits(l ExpandLimits) Option { return func(o *options) { o.expand = l } }

// ErrUnknownMessage is matched by Expand's error when an id is in no
// snapshot of the conversation still in the snapshot stream: snapshots
// expire after the streams' MaxAge, or the id was never published.
var ErrUnknownMessage = errors.New("message not in the conversation's stored snapshots")

// unknownMessageError names the id that is unknown and how long snapshots
// are kept.
type unknownMessageError struct {
	id     string
	maxAge time.Duration
}

func (e *unknownMessageError) Error() string {
	return fmt.Sprintf("%q: %v (snapshots are kept %s)", e.id, ErrUnknownMessage, e.maxAge)
}

func (e *unknownMessageError) Unwrap() error { return ErrUnknownMessage }

// toolText is the error as the expand tool's answer says it.
func (e *unknownMessageError) toolText() string {
	return fmt.Sprintf("message %q is not in this conversation's stored snapshots (kept %s): it expired, or was never published", e.id, e.maxAge)
}

// ErrInvalidQuery is matched by Search's error for an empty, oversized or
// (with SearchRegexp) unparsable query.
var ErrInvalidQuery = errors.New("invalid search query")

type invalidQueryError struct{ reason string }

func (e *invalidQueryError) Error() string        { return ErrInvalidQuery.Error() + ": " + e.reason }
func (e *invalidQueryError) Is(target error) bool { return target == ErrInvalidQuery }

// ExpiredError names the messages of an answer whose bodies are no longer
// in the body stream: bodies expire after the streams' MaxAge (the workers'
// --max-age), and the briefing is then all that is left of them. Expand
// returns it with the messages that could still be read.
type ExpiredError struct {
	ConversationID string
	// IDs are the expired messages, in conversation order.
	IDs []string
	// MaxAge is the streams' MaxAge as the client last read it.
	MaxAge time.Duration
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("client: %s: %s expired from the body stream (bodies are kept %s)", e.ConversationID, describeIDs(e.IDs), e.MaxAge)
}

// describeIDs names a list of ids briefly: "message m3", or "7 messages
// from m3 to m9".
func describeIDs(ids []string) string {
	switch len(ids) {
	case 0:
		return "no message"
	case 1:
		return "message " + ids[0]
	default:
		return fmt.Sprintf("%d messages from %s to %s", len(ids), ids[0], ids[len(ids)-1])
	}
}

// Expansion is the answer of Expand: original messages of a conversation,
// verbatim, within the client's ExpandLimits.
type Expansion struct {
	ConversationID string
	// FromID and ToID are the range asked for, in conversation order.
	FromID, ToID string
	// Messages are the originals from FromID on, in order, as published
	// (the newest body of an edited message).
	Messages []briefd.Message
	// Truncated is set when a limit cut the answer: NextID is then the
	// first message left out (call Expand again from it), or empty when
	// the only cut was a message clipped to MaxBytes.
	Truncated bool
	NextID    string
	// Expired are the messages of the range whose bodies are gone.
	Expired []string
}

// Expand returns the original messages of conversation conv from fromID
// to toID (inclusive; toID "" means fromID alone; reversed ids are put in
// order), read from the streams: every message any stored snapshot of the
// conversation names, whether it was compacted or not (see
// queue.Resolver.Originals for the order). The answer holds at most
// ExpandLimits.MaxMessages messages and MaxBytes of text; Truncated and
// NextID say where to go on.
//
// Errors: ErrInvalidID, ErrClosed, ErrUnknownMessage (an id the stored
// snapshots do not name), an *ExpiredError with the messages still readable
// when some bodies have expired, or a wrapped NATS error. The client's
// NATS user needs the reads docs/protocol.md lists under "Reading the
// originals".
func (c *Client) Expand(ctx context.Context, conv, fromID, toID string) (*Expansion, error) {
	if !queue.ValidToken(conv) {
		return nil, fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	if fromID == "" {
		return nil, fmt.Errorf("client: expand %s: empty from id", conv)
	}
	if toID == "" {
		toID = fromID
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	entries, err := c.originals(ctx, conv)
	if err != nil {
		return nil, fmt.Errorf("client: expand %s: %w", conv, err)
	}
	i, j := indexOf(entries, fromID), indexOf(entries, toID)
	for _, k := range []struct {
		at int
		id string
	}{{i, fromID}, {j, toID}} {
		if k.at < 0 {
			return nil, fmt.Errorf("client: expand %s: %w", conv, &unknownMessageError{id: k.id, maxAge: c.pub.Limits().MaxAge})
		}
	}
	if i > j {
		i, j = j, i
	}
	ex := &Expansion{ConversationID: conv, FromID: entries[i].ID, ToID: entries[j].ID}
	lim := c.expandLimits
	used := 0
	err = c.readBodies(ctx, conv, entries[i:j+1], func(e queue.Entry, m *briefd.Message) bool {
		if m == nil {
			ex.Expired = append(ex.Expired, e.ID)
			return true
		}
		size := m.Size()
		switch {
		case len(ex.Messages) == lim.MaxMessages || (used+size > lim.MaxBytes && len(ex.Messages) > 0):
			ex.Truncated, ex.NextID = true, e.ID
			return false
		case size > lim.MaxBytes:
			clipMessage(m, lim.MaxBytes)
			ex.Truncated = true
			size = m.Size()
		}
		ex.Messages = append(ex.Messages, *m)
		used += size
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("client: expand %s: %w", conv, err)
	}
	if len(ex.Expired) > 0 {
		return ex, &ExpiredError{ConversationID: conv, IDs: ex.Expired, MaxAge: c.pub.Limits().MaxAge}
	}
	return ex, nil
}

// SearchOption changes what Search looks for.
type SearchOption func(*searchOpts)

type searchOpts struct {
	regexp, all bool
}

// SearchRegexp makes the query a regular expression (RE2 syntax, as Go's
// regexp package reads it) rather than a case-insensitive substring.
func SearchRegexp() SearchOption { return func(o *searchOpts) { o.regexp = true } }

// SearchAll searches every stored original of the conversation rather
// than only those before the latest briefing's boundary.
func SearchAll() SearchOption { return func(o *searchOpts) { o.all = true } }

// SearchResult is the answer of Search.
type SearchResult struct {
	ConversationID string
	Query          string
	Regexp         bool
	// Matches are the matching messages in conversation order, at most
	// ExpandLimits.MaxMatches, with snippets adding up to at most MaxBytes.
	Matches []SearchMatch
	// Truncated is set when more messages matched than Matches holds.
	Truncated bool
	// Searched counts the messages searched; Expired names those whose
	// bodies are gone and could not be searched.
	Searched int
	Expired  []string
}

// SearchMatch is one matching message.
type SearchMatch struct {
	ID   string      `json:"id"`
	Role briefd.Role `json:"role"`
	// Snippet is the text around the first match, "…" marking a cut.
	Snippet string `json:"snippet"`
	// Count is the number of matches in the message (at most 100).
	Count int `json:"count"`
}

// Search looks for query in the compacted originals of conversation conv:
// the stored originals before the latest briefing's boundary (with
// SearchAll, every stored original). The query is a case-insensitive
// substring (read as a briefing's quote when it holds the briefing's
// marks: "…" for any text, "⏎", "⇥" and spaces for any whitespace), or
// with SearchRegexp a regular expression; it is matched
// against each message's text: its content, then each tool call as
// "name(arguments)" on a line of its own. Matches come in conversation
// order with their message ids, which Expand takes.
//
// Errors: ErrInvalidID, ErrClosed, ErrNoBriefing (nothing compacted yet;
// not with SearchAll), an invalid query, or a wrapped store or NATS error.
// Expired bodies are not an error: Expired names them.
func (c *Client) Search(ctx context.Context, conv, query string, opts ...SearchOption) (*SearchResult, error) {
	var o searchOpts
	for _, opt := range opts {
		opt(&o)
	}
	if !queue.ValidToken(conv) {
		return nil, fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	re, err := compileQuery(query, o.regexp)
	if err != nil {
		return nil, fmt.Errorf("client: search %s: %w", conv, &invalidQueryError{err.Error()})
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	boundary := ""
	if !o.all {
		b, err := c.Latest(ctx, conv)
		if err != nil {
			return nil, err
		}
		boundary = b.BoundaryID
	}
	entries, err := c.originals(ctx, conv)
	if err != nil {
		return nil, fmt.Errorf("client: search %s: %w", conv, err)
	}
	if k := indexOf(entries, boundary); boundary != "" && k >= 0 {
		entries = entries[:k]
	}
	res := &SearchResult{ConversationID: conv, Query: query, Regexp: o.regexp}
	lim := c.expandLimits
	used := 0
	err = c.readBodies(ctx, conv, entries, func(e queue.Entry, m *briefd.Message) bool {
		if m == nil {
			res.Expired = append(res.Expired, e.ID)
			return true
		}
		res.Searched++
		text := searchText(m)
		locs := re.FindAllStringIndex(text, 100)
		if len(locs) == 0 {
			return true
		}
		snip := snippet(text, locs[0][0], locs[0][1])
		if len(res.Matches) == lim.MaxMatches || (used+len(snip) > lim.MaxBytes && len(res.Matches) > 0) {
			res.Truncated = true
			return true // keep counting what was searched
		}
		used += len(snip)
		res.Matches = append(res.Matches, SearchMatch{ID: m.ID, Role: m.Role, Snippet: snip, Count: len(locs)})
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("client: search %s: %w", conv, err)
	}
	return res, nil
}

// compileQuery returns the matcher of a query: a case-insensitive literal,
// or the regular expression itself.
func compileQuery(query string, isRegexp bool) (*regexp.Regexp, error) {
	switch {
	case query == "":
		return nil, errors.New("empty query")
	case len(query) > MaxQueryLength:
		return nil, fmt.Errorf("query is %d bytes, more than the limit of %d", len(query), MaxQueryLength)
	case !utf8.ValidString(query):
		return nil, errors.New("query is not valid UTF-8")
	}
	if !isRegexp {
		return literalQuery(query)
	}
	re, err := regexp.Compile(query)
	if err != nil {
		return nil, err
	}
	return re, nil
}

// literalQuery matches query as a case-insensitive substring. A query
// that holds a briefing's marks is read as the briefing writes a quote, so
// that what it shows of a text finds it: "…" (where it cut the text)
// stands for any text, and a " (N hex digits)" after a value told by its
// ends is dropped ("A76EDD72…DCFAC323 (256 hex digits)"); "⏎" and "⇥"
// (a line break, a tab) and every run of spaces stand for any run of
// whitespace, which the briefing collapses.
func literalQuery(query string) (*regexp.Regexp, error) {
	if !strings.ContainsAny(query, briefingMarks) {
		return regexp.MustCompile("(?i)" + regexp.QuoteMeta(query)), nil
	}
	query = hexCount.ReplaceAllString(query, "")
	var parts []string
	for p := range strings.SplitSeq(query, cutMark) {
		if words := strings.FieldsFunc(p, quoteSpace); len(words) > 0 {
			for i, w := range words {
				words[i] = regexp.QuoteMeta(w)
			}
			parts = append(parts, strings.Join(words, `\s+`))
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("query has no text besides the briefing's marks (" + briefingMarks + ")")
	}
	return regexp.MustCompile("(?is)" + strings.Join(parts, ".*?")), nil
}

// quoteSpace reports what separates the words of a briefing quote: the
// ASCII whitespace regexp's \s matches, and the marks of a line break and
// a tab. (Other spaces are text, as in the TypeScript SDK.)
func quoteSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r' || r == '⏎' || r == '⇥'
}

// cutMark is what a briefing shows where it cut a text; briefingMarks are
// it and the marks of a line break and a tab in the code it quotes.
const (
	cutMark       = "…"
	briefingMarks = "…⏎⇥"
)

// hexCount is the length a briefing gives after a hex value told by its
// ends: "A76EDD72…DCFAC323 (256 hex digits)".
var hexCount = regexp.MustCompile(`\s*\(\d+ hex digits\)`)

// searchText is what Search matches in a message: its text content, then
// each tool call as "name(arguments)" on a line of its own.
func searchText(m *briefd.Message) string {
	text := m.Content.String()
	if len(m.ToolCalls) == 0 {
		return text
	}
	var sb strings.Builder
	sb.WriteString(text)
	for _, tc := range m.ToolCalls {
		sb.WriteByte('\n')
		sb.WriteString(tc.Function.Name)
		sb.WriteByte('(')
		sb.WriteString(tc.Function.Arguments)
		sb.WriteByte(')')
	}
	return sb.String()
}

// snippet returns the text around text[start:end]: snippetContext
// characters on each side and at most snippetMatch of the match, "…"
// marking each cut.
func snippet(text string, start, end int) string {
	from := start
	for n := 0; n < snippetContext && from > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(text[:from])
		from -= size
	}
	to := start
	for n := 0; n < snippetMatch && to < end; n++ {
		_, size := utf8.DecodeRuneInString(text[to:])
		to += size
	}
	cutMatch := to < end
	for n := 0; n < snippetContext && to < len(text); n++ {
		_, size := utf8.DecodeRuneInString(text[to:])
		to += size
	}
	var sb strings.Builder
	if from > 0 {
		sb.WriteString("…")
	}
	if cutMatch {
		// The match is longer than snippetMatch: show its start only.
		mid := start
		for n := 0; n < snippetMatch; n++ {
			_, size := utf8.DecodeRuneInString(text[mid:])
			mid += size
		}
		sb.WriteString(text[from:mid])
		sb.WriteString("…")
		return sb.String()
	}
	sb.WriteString(text[from:to])
	if to < len(text) {
		sb.WriteString("…")
	}
	return sb.String()
}

// clipMessage cuts m's text to about max bytes of Message.Size: the
// content (flattened to its text) first, then the tool calls' arguments
// with what is left, each cut followed by a mark saying how much was cut.
func clipMessage(m *briefd.Message, max int) {
	budget := max
	for _, tc := range m.ToolCalls {
		budget -= len(tc.Function.Name)
	}
	clip := func(s string) string {
		if len(s) <= budget {
			budget -= len(s)
			return s
		}
		cut := clipUTF8(s, budget)
		budget = 0
		return cut + fmt.Sprintf("\n[… clipped by briefd: %d more bytes]", len(s)-len(cut))
	}
	if text := m.Content.String(); len(text) > budget || m.Content.IsParts() {
		m.Content = briefd.Text(clip(text))
	} else {
		budget -= len(text)
	}
	for i := range m.ToolCalls {
		m.ToolCalls[i].Function.Arguments = clip(m.ToolCalls[i].Function.Arguments)
	}
}

// clipUTF8 returns the longest prefix of s of at most n bytes that ends on
// a character boundary.
func clipUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func indexOf(entries []queue.Entry, id string) int {
	for i := range entries {
		if entries[i].ID == id {
			return i
		}
	}
	return -1
}

// readBodies reads the bodies of entries, fetchAhead at a time, and calls
// visit with each message in order (nil for a body that expired or cannot
// be read) until it returns false. Transient errors stop the walk.
func (c *Client) readBodies(ctx context.Context, conv string, entries []queue.Entry, visit func(queue.Entry, *briefd.Message) bool) error {
	r := c.resolver()
	for start := 0; start < len(entries); start += fetchAhead {
		batch := entries[start:min(start+fetchAhead, len(entries))]
		msgs := make([]*briefd.Message, len(batch))
		g, gctx := errgroup.WithContext(ctx)
		for k, e := range batch {
			g.Go(func() error {
				body, err := r.Body(gctx, c.tenant, conv, e.Hash)
				switch {
				case errors.Is(err, queue.ErrBodyMissing):
					return nil
				case errors.Is(err, queue.ErrMalformed):
					c.log.Warn("briefd client: unreadable body", "tenant", c.tenant, "conversation", conv, "message", e.ID, "err", err)
					return nil
				case err != nil:
					return err
				}
				var m briefd.Message
				if err := json.Unmarshal(body, &m); err != nil || m.ID != e.ID {
					c.log.Warn("briefd client: body is not the message the snapshot names", "tenant", c.tenant, "conversation", conv, "message", e.ID, "err", err)
					return nil
				}
				msgs[k] = &m
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for k, e := range batch {
			if !visit(e, msgs[k]) {
				return nil
			}
		}
	}
	return nil
}

// maxScans bounds the conversations whose originals a client keeps between
// calls.
const maxScans = 64

// originals returns the conversation's originals in order. The client
// keeps the scan of the last conversations it expanded, so a later call
// reads only the snapshots stored since.
func (c *Client) originals(ctx context.Context, conv string) ([]queue.Entry, error) {
	c.scansMu.Lock()
	sc, ok := c.scans[conv]
	if !ok {
		s, err := queue.NewOriginalsScan(c.tenant, conv)
		if err != nil {
			c.scansMu.Unlock()
			return nil, err
		}
		if len(c.scans) >= maxScans {
			oldest := c.scanOrder[0]
			c.scanOrder = c.scanOrder[1:]
			delete(c.scans, oldest)
		}
		sc = &scan{s: s}
		if c.scans == nil {
			c.scans = map[string]*scan{}
		}
		c.scans[conv] = sc
		c.scanOrder = append(c.scanOrder, conv)
	}
	c.scansMu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if err := c.resolver().UpdateOriginals(ctx, sc.s); err != nil {
		return nil, err
	}
	return sc.s.Entries(), nil
}

// scan is a conversation's kept scan; mu serializes its updates.
type scan struct {
	mu sync.Mutex
	s  *queue.OriginalsScan
}

// resolver returns the client's reader of the streams, made on first use
// (its zstd decoder is not free).
func (c *Client) resolver() *queue.Resolver {
	c.resolverOnce.Do(func() {
		c.res = queue.NewResolver(c.js, queue.Config{Prefix: c.prefix, Logger: c.log,
			// A scan resolves each snapshot's list on the one before it
			// (no decoded history is kept); bodies are cached for
			// repeated calls.
			ResolvedCacheBytes: 1 << 20, BodyCacheBytes: 8 << 20})
	})
	return c.res
}
