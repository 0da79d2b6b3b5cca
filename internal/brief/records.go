package brief

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Records: API tools answer with JSON objects (a reservation, a user
// profile, a list of flights). A record becomes one line: its id, then its
// fields, nested objects condensed to their id and date (a flight becomes
// "HAT247 2024-05-24"), a name object to its words. Fields the system
// prompt names come first, so that when the line must be shortened the
// ones the policy reasons about stay.

// record is one JSON object a tool returned.
type record struct {
	id     string
	fields []field
	// lists are the fields holding a list of ids (a profile's
	// reservations), to tell which ids were read later and which not.
	lists map[string][]string
	// parts are the records a combination is made of (a one-stop
	// flight's legs), in order; nil for a plain record.
	parts []record
	// loop is the stops of a record that ends where it starts (origin
	// EWR, destination EWR), read from its legs: "EWR-IAH-EWR".
	loop string
}

type field struct {
	name  string
	value string
	// brief is the value with its items told by their ids and dates
	// alone, where that differs (condense): the least detail's.
	brief string
}

// briefValue is the field's value at the least detail.
func (f field) briefValue() string { return cmpOr(f.brief, f.value) }

// parseRecords reads a tool output as JSON records: an object is one
// record (or, when it maps ids to objects, one per entry); an array of
// objects is one record each. key names a record without an id field
// (the call's primary argument).
func parseRecords(body, key string) []record {
	b := bytes.TrimSpace([]byte(body))
	if len(b) == 0 || b[0] != '{' && b[0] != '[' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil || dec.More() {
		return nil
	}
	switch x := v.(type) {
	case *object:
		return []record{toRecord(x, key)}
	case []any:
		var out []record
		for _, e := range x {
			switch el := e.(type) {
			case *object:
				out = append(out, toRecord(el, ""))
			case []any:
				// A combination of records (a one-stop flight's legs): one
				// record named by its parts' ids.
				var ids []string
				var parts []record
				for _, part := range el {
					if o, ok := part.(*object); ok {
						if _, id := recordID(o); id != "" {
							ids = append(ids, id)
							parts = append(parts, toRecord(o, ""))
						}
					}
				}
				if len(ids) > 0 {
					out = append(out, record{id: strings.Join(ids, "+"), fields: []field{{name: "parts", value: condenseValue(el, 1)}}, parts: parts})
				}
			}
		}
		return out
	}
	return nil
}

// object is a JSON object that remembers its keys' order: a tool's field
// order is how its author grouped the record.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) any { return o.vals[k] }

// decodeOrdered decodes one JSON value, objects as *object, numbers as
// json.Number.
func decodeOrdered(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			var arr []any
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			if arr == nil {
				arr = []any{}
			}
			return arr, err
		}
	}
	return t, nil
}

// idKeys are the field names that identify a record, best first.
var idKeys = []string{"id", "reservation_id", "order_id", "user_id", "ticket_id", "flight_number", "number", "name", "key", "sku", "uuid"}

func recordID(m *object) (string, string) {
	for _, k := range idKeys {
		if s := scalarString(m.get(k)); s != "" && len(s) <= 64 {
			return k, s
		}
	}
	for _, k := range m.keys {
		if strings.HasSuffix(k, "_id") {
			if s := scalarString(m.get(k)); s != "" {
				return k, s
			}
		}
	}
	return "", ""
}

func toRecord(m *object, key string) record {
	idKey, id := recordID(m)
	if id == "" || key != "" && idKey != "id" && !strings.HasSuffix(idKey, "_id") {
		if key != "" {
			id, idKey = key, ""
		}
	}
	r := record{id: id, loop: loopStops(m)}
	for _, k := range m.keys {
		if k == idKey {
			continue
		}
		v := m.get(k)
		if ids := idValues(v); len(ids) > 1 {
			if r.lists == nil {
				r.lists = map[string][]string{}
			}
			r.lists[k] = ids
		}
		s := condenseValue(v, 0)
		if s == "" {
			continue
		}
		f := field{name: k, value: s}
		if b := condense(v, 0, true); b != s {
			f.brief = b
		}
		r.fields = append(r.fields, f)
	}
	return r
}

// loopStops returns the stops of a trip that starts and ends at one place
// (origin EWR, destination EWR), read from a list of legs that chain by
// the same two fields ("EWR-IAH-EWR"), or "". Its ends alone ("EWR-EWR")
// do not say where it goes. Only origin and destination: other pairs that
// chain (a mail thread's from and to) are not a route.
func loopStops(m *object) string {
	p := routePairs[0]
	from, to := scalarString(m.get(p[0])), scalarString(m.get(p[1]))
	if from == "" || from != to {
		return ""
	}
	for _, k := range m.keys {
		legs, ok := m.get(k).([]any)
		if !ok || len(legs) < 2 {
			continue
		}
		stops := []string{from}
		for _, l := range legs {
			o, ok := l.(*object)
			if !ok || scalarString(o.get(p[0])) != stops[len(stops)-1] || scalarString(o.get(p[1])) == "" {
				stops = nil
				break
			}
			stops = append(stops, scalarString(o.get(p[1])))
		}
		if len(stops) > 2 && stops[len(stops)-1] == to {
			return strings.Join(stops, "-")
		}
	}
	return ""
}

// idValues returns the values of a list of short id-like strings.
func idValues(v any) []string {
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return nil
	}
	var out []string
	for _, e := range arr {
		s, ok := e.(string)
		if !ok || len(s) > 40 || strings.ContainsAny(s, " \n") {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// condenseValue renders a JSON value on one line: scalars as they are,
// objects by their id and what tells them apart (or their short values),
// arrays joined.
func condenseValue(v any, depth int) string { return condense(v, depth, false) }

// condense is condenseValue; brief tells items by their ids and dates
// alone ("HAT078, HAT118 05-27"), as the least detail does.
func condense(v any, depth int, brief bool) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return clip(x, 120)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		if len(x) == 0 {
			return "none"
		}
		parts := make([]string, 0, len(x))
		for _, e := range x {
			if s := condense(e, depth+1, brief); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(factorDates(parts), ", ")
	case *object:
		return condenseObject(x, depth, brief)
	case map[string]any:
		o := &object{vals: x}
		for k := range x {
			o.keys = append(o.keys, k)
		}
		sort.Strings(o.keys)
		return condenseObject(o, depth, brief)
	}
	return ""
}

// condenseObject renders a nested object: its id with its date-like and
// status fields; a map of ids to objects as "id (values)"; else its short
// scalar values.
func condenseObject(m *object, depth int, brief bool) string {
	if len(m.keys) == 0 {
		return ""
	}
	if _, id := recordID(m); id != "" {
		// An item of a record (a reservation's flight, an order's line)
		// keeps its route, date, status and price: which leg goes where,
		// when, and what it cost are what a change is computed from.
		parts := []string{id}
		if r := itemRoute(m); r != "" && !brief {
			parts = append(parts, r)
		}
		for _, k := range m.keys {
			s := scalarString(m.get(k))
			if s == "" || s == id {
				continue
			}
			money := k == "amount" || k == "price"
			if looksLikeDate(s) || k == "status" || money && (!brief || len(m.keys) <= 3) || k == "brand" || k == "last_four" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, " ")
	}
	// A map whose values are objects keyed by id: {"gift_card_1": {...}}.
	allObjects := true
	for _, k := range m.keys {
		if _, ok := m.get(k).(*object); !ok {
			allObjects = false
			break
		}
	}
	if allObjects && depth < 2 {
		parts := make([]string, 0, len(m.keys))
		for _, k := range m.keys {
			inner := m.get(k).(*object)
			var vals []string
			for _, ik := range inner.keys {
				s := scalarString(inner.get(ik))
				// A value the key already says ("gift_card" of
				// gift_card_7091239) is left out.
				if s != "" && s != k && ik != "id" && len(s) <= 40 && !strings.HasPrefix(k, s) {
					vals = append(vals, s)
				}
			}
			p := k
			if len(vals) > 0 {
				p += " (" + strings.Join(vals, " ") + ")"
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, ", ")
	}
	// A small object of numbers names each ("economy 163, business 235");
	// one of words joins its first two ("Amelia Davis").
	numbers := len(m.keys) <= 8
	for _, k := range m.keys {
		if _, ok := m.get(k).(json.Number); !ok {
			numbers = false
			break
		}
	}
	var vals []string
	for _, k := range m.keys {
		s := condense(m.get(k), depth+1, brief)
		if s == "" || len(s) > 60 {
			continue
		}
		if numbers {
			s = k + " " + s
		} else if len(vals) == 2 {
			break
		}
		vals = append(vals, s)
	}
	if numbers {
		return strings.Join(vals, ", ")
	}
	return strings.Join(vals, " ")
}

// itemRoute is an item's route, "IAH-JFK", from the first pair of route
// fields it has (routePairs) whose values are places: short and without
// digits (an account id or a date is not a stop, and "acc_1001-acc_2002"
// would read as one name the span never wrote); "" when it has none.
func itemRoute(m *object) string {
	for _, p := range routePairs {
		a, b := scalarString(m.get(p[0])), scalarString(m.get(p[1]))
		if place(a) && place(b) {
			return a + "-" + b
		}
	}
	return ""
}

// place reports a value that names a stop: a short word without digits
// ("IAH", "Boston").
func place(v string) bool {
	return v != "" && len(v) <= 24 && !strings.ContainsAny(v, "0123456789 -")
}

// factorDates writes "HAT099, HAT274 2024-05-22" for "HAT099 2024-05-22,
// HAT274 2024-05-22": a run of items that end in the same date says it once.
func factorDates(parts []string) []string {
	out := make([]string, 0, len(parts))
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		j := strings.LastIndexByte(p, ' ')
		if j < 0 || !looksLikeDate(p[j+1:]) || i+1 == len(parts) || !strings.HasSuffix(parts[i+1], p[j:]) {
			out = append(out, p)
			continue
		}
		out = append(out, p[:j])
	}
	return out
}

func looksLikeDate(s string) bool {
	return len(s) >= 10 && s[4] == '-' && s[7] == '-' && s[0] >= '0' && s[0] <= '9'
}

// line renders a record as "ID: name value; name value", with the fields
// the context names first and at most max bytes.
func (r *record) line(weigh func(string) int, max int) string {
	var b strings.Builder
	b.WriteString(r.id)
	fields := append([]field(nil), r.fields...)
	rank := func(f field) int {
		n := 0
		if weigh != nil {
			n += weigh(f.name)
		}
		if holdsIDs(f.value) {
			n++
		}
		if looksLikeDate(f.value) {
			n += 2 // policies reason about dates (bookings older than 24 h)
		}
		return -n
	}
	sort.SliceStable(fields, func(i, j int) bool { return rank(fields[i]) < rank(fields[j]) })
	sep := ": "
	for _, f := range fields {
		part := f.name + " " + f.value
		if b.Len()+len(sep)+len(part) > max {
			if b.Len()+len(sep)+len(f.name)+8 < max {
				b.WriteString(sep)
				b.WriteString(clip(part, max-b.Len()-1))
			}
			b.WriteString(" …")
			break
		}
		b.WriteString(sep)
		b.WriteString(part)
		sep = "; "
	}
	return b.String()
}

// contactFieldRe names the fields that say how to reach a person.
var contactFieldRe = regexp.MustCompile(`(?i)^(?:address|addresses|email|e_mail|phone|phone_number|mobile|fax|contact)$`)

// holdsIDs reports whether a value carries ids (gift_card_7397998,
// HAT247, 8C8K4E): tokens mixing letters and digits, which the agent
// passes to its tools again.
func holdsIDs(v string) bool {
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '(' || r == ')' || r == ';' }) {
		if strings.Contains(w, "@") {
			continue // an email address is a contact, not an id a tool takes
		}
		letters, digits := false, false
		for i := 0; i < len(w); i++ {
			c := w[i]
			letters = letters || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			digits = digits || c >= '0' && c <= '9'
		}
		if letters && digits && len(w) >= 5 && !looksLikeDate(w) {
			return true
		}
	}
	return false
}

// shape names a record's kind by its field names.
func (r *record) shape() string {
	var b strings.Builder
	for _, f := range r.fields {
		b.WriteString(f.name)
		b.WriteByte(',')
	}
	return b.String()
}

// field returns the field of that name.
func (r *record) field(name string) (field, bool) {
	for _, f := range r.fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// value returns a field's value.
func (r *record) value(name string) (string, bool) {
	f, ok := r.field(name)
	return f.value, ok
}

// briefValue is a field's value at the least detail (field.briefValue).
func (r *record) briefValue(name string) (string, bool) {
	f, ok := r.field(name)
	return f.briefValue(), ok
}
