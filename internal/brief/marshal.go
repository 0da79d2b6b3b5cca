package brief

import (
	"encoding/binary"
	"encoding/json"
)

// marshal returns json.Marshal(r), taking each entry's JSON from entry:
// the entries are most of a record, and a warm Write's are mostly those of
// the Write before (see model.entryJSON).
func (r *Record) marshal(entry func(*Entry) ([]byte, error)) ([]byte, error) {
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
			e, err := entry(&r.Sections[i].Entries[k])
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

// entryJSON returns json.Marshal(e), kept between Writes while entries
// are the same: the entries of one Write are kept for the next, those it
// did not use dropped, so the memo holds at most two records' entries.
func (m *model) entryJSON(e *Entry) ([]byte, error) {
	k := keyOf(e)
	if b, ok := m.entries[k]; ok {
		return b, nil
	}
	b, ok := m.lastEntries[k]
	if !ok {
		var err error
		if b, err = json.Marshal(e); err != nil {
			return nil, err
		}
	}
	if m.entries == nil {
		// A Write marshals about as many entries as the last one: sized
		// so, the map is not grown and rehashed through its thousands.
		m.entries = make(map[entryMemoKey][]byte, len(m.lastEntries))
	}
	m.entries[k] = b
	m.entriesBytes += 64 + len(k.ids) + len(b) // the key and text are shared with the lines
	return b, nil
}

// turnEntries starts the next Write's memo of entries with the last
// Write's as the one to take from.
func (m *model) turnEntries() {
	m.lastEntries, m.entries = m.entries, nil
	m.lastEntriesBytes, m.entriesBytes = m.entriesBytes, 0
}
