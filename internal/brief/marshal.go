package brief

import (
	"encoding/binary"
	"encoding/json"
	"slices"
)

// marshal returns json.Marshal(r), taking each entry's JSON from entry:
// the entries are most of a record, and a warm Write's are mostly those of
// the Write before (see model.entryJSON).
func (r *Record) marshal(entry func(sec string, k int, e *Entry) ([]byte, error)) ([]byte, error) {
	// The fields around the sections are marshalled as json.Marshal
	// would, in their order; the sections are written between them.
	head, err := json.Marshal(struct {
		Format string   `json:"format"`
		Covers []string `json:"covers"`
		Depth  int      `json:"depth"`
	}{r.Format, r.Covers, r.Depth})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(struct {
		Index    []string `json:"index,omitempty"`
		Coverage Coverage `json:"coverage"`
	}{r.Index, r.Coverage})
	if err != nil {
		return nil, err
	}
	// The entries first, to write the whole in one buffer.
	var entries [][]byte
	size := len(head) + len(tail) + 64
	for i := range r.Sections {
		size += 32 + len(r.Sections[i].Name)
		for k := range r.Sections[i].Entries {
			e, err := entry(r.Sections[i].Name, k, &r.Sections[i].Entries[k])
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
			size += len(e) + 1
		}
	}
	b := make([]byte, 0, size)
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"sections":`...)
	if r.Sections == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Sections {
			s := &r.Sections[i]
			if i > 0 {
				b = append(b, ',')
			}
			name, err := json.Marshal(s.Name)
			if err != nil {
				return nil, err
			}
			b = append(append(append(b, `{"name":`...), name...), `,"entries":`...)
			if s.Entries == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for k := range s.Entries {
					if k > 0 {
						b = append(b, ',')
					}
					b = append(b, entries[0]...)
					entries = entries[1:]
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(append(b, ','), tail[1:]...), nil
}

// entryMemoKey is an Entry as a map key: its ids length-prefixed.
type entryMemoKey struct {
	key, text, ids string
}

func keyOf(e *Entry) entryMemoKey {
	var ids []byte
	for _, id := range e.IDs {
		ids = binary.AppendUvarint(ids, uint64(len(id)))
		ids = append(ids, id...)
	}
	if e.IDs != nil && len(e.IDs) == 0 {
		ids = []byte{0xff} // empty, not nil (the same JSON, kept apart anyway)
	}
	return entryMemoKey{e.Key, e.Text, string(ids)}
}

// entryJSON returns json.Marshal(e), the k-th entry of section sec, kept
// between Writes while entries are the same: the entries of one Write are
// kept for the next, those it did not use dropped, so the memo holds at
// most two records' entries. An entry is first compared with the last
// Write's at its place in its section (a string compare, which its text
// shared with the last Write's lines makes a pointer compare), then looked
// up by its content (a hash of the whole text), for the entries that moved.
// One taken from its place is not also hashed unless it is short: a long
// one is a user's message, which keeps its place (the next Write's
// entries are looked up among this Write's).
func (m *model) entryJSON(sec string, k int, e *Entry) ([]byte, error) {
	b, ok := m.entryAt(m.lastPlaced[sec], k, e)
	if ok && len(e.Text) > placedOnly {
		m.place(sec, k, e, b, false)
		return b, nil
	}
	key := keyOf(e)
	if !ok {
		if b, ok = m.entries[key]; ok {
			m.place(sec, k, e, b, true)
			return b, nil
		}
		if b, ok = m.lastEntries[key]; !ok {
			var err error
			if b, err = json.Marshal(e); err != nil {
				return nil, err
			}
		}
	}
	if m.entries == nil {
		// A Write marshals about as many entries as the last one: sized
		// so, the map is not grown and rehashed through its thousands.
		m.entries = make(map[entryMemoKey][]byte, len(m.lastEntries))
	}
	m.entries[key] = b
	m.entriesBytes += 64 + len(key.ids) + len(b) // the key and text are shared with the lines
	m.place(sec, k, e, b, true)
	return b, nil
}

// placedOnly is the length of text over which an entry found at its place
// is not also kept by content.
const placedOnly = 256

// placedEntry is an entry with its JSON, at its place in its section.
type placedEntry struct {
	e  Entry
	js []byte
}

// entryAt returns the JSON of at[k] if it is e's.
func (m *model) entryAt(at []placedEntry, k int, e *Entry) ([]byte, bool) {
	if k >= len(at) {
		return nil, false
	}
	p := &at[k]
	if p.e.Key != e.Key || p.e.Text != e.Text || (p.e.IDs == nil) != (e.IDs == nil) || !slices.Equal(p.e.IDs, e.IDs) {
		return nil, false
	}
	return p.js, true
}

// place records e's JSON at its place for the next Write; counted tells
// that entries holds the JSON too (its bytes are counted there).
func (m *model) place(sec string, k int, e *Entry, js []byte, counted bool) {
	if m.placed == nil {
		m.placed = map[string][]placedEntry{}
	}
	at := m.placed[sec]
	if k != len(at) {
		return // a record's entries are marshalled in order
	}
	m.placed[sec] = append(at, placedEntry{*e, js})
	m.entriesBytes += 64 + 16*len(e.IDs) // the text is shared with the lines
	if !counted {
		m.entriesBytes += len(js)
	}
}

// turnEntries starts the next Write's memo of entries with the last
// Write's as the one to take from.
func (m *model) turnEntries() {
	m.lastEntries, m.entries = m.entries, nil
	m.lastPlaced, m.placed = m.placed, nil
	m.lastEntriesBytes, m.entriesBytes = m.entriesBytes, 0
}
