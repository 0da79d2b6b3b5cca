package cache_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// TestBriefingSchema keeps docs/schema/briefing.v1.json in step with
// briefd.Briefing: the same property names, and required fields that the
// struct always writes (no omitempty).
func TestBriefingSchema(t *testing.T) {
	checkSchema[briefd.Briefing](t, "../../docs/schema/briefing.v1.json")
}

// TestStatusSchema does the same for docs/schema/status.v1.json.
func TestStatusSchema(t *testing.T) {
	checkSchema[briefd.Status](t, "../../docs/schema/status.v1.json")
}

func checkSchema[T any](t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Examples   []json.RawMessage          `json:"examples"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("schema is not valid JSON: %v", err)
	}
	fields := map[string]bool{} // json name -> omitempty
	typ := reflect.TypeFor[T]()
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = strings.Contains(opts, "omitempty")
	}
	for name := range fields {
		if _, ok := schema.Properties[name]; !ok {
			t.Errorf("field %q of %s is missing from the schema", name, typ)
		}
	}
	for name := range schema.Properties {
		if _, ok := fields[name]; !ok {
			t.Errorf("schema property %q is not a field of %s", name, typ)
		}
	}
	for _, name := range schema.Required {
		if omit, ok := fields[name]; !ok || omit {
			t.Errorf("schema requires %q, which %s may omit", name, typ)
		}
	}
	for _, ex := range schema.Examples {
		var v T
		dec := json.NewDecoder(strings.NewReader(string(ex)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Errorf("schema example does not decode into %s: %v", typ, err)
		}
	}
}
