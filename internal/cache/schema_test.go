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
	data, err := os.ReadFile("../../docs/schema/briefing.v1.json")
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
	typ := reflect.TypeFor[briefd.Briefing]()
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = strings.Contains(opts, "omitempty")
	}
	for name := range fields {
		if _, ok := schema.Properties[name]; !ok {
			t.Errorf("field %q of briefd.Briefing is missing from the schema", name)
		}
	}
	for name := range schema.Properties {
		if _, ok := fields[name]; !ok {
			t.Errorf("schema property %q is not a field of briefd.Briefing", name)
		}
	}
	for _, name := range schema.Required {
		if omit, ok := fields[name]; !ok || omit {
			t.Errorf("schema requires %q, which briefd.Briefing may omit", name)
		}
	}
	for _, ex := range schema.Examples {
		var b briefd.Briefing
		dec := json.NewDecoder(strings.NewReader(string(ex)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			t.Errorf("schema example does not decode into briefd.Briefing: %v", err)
		}
	}
}
