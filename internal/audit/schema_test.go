package audit_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/briefd/briefd/internal/audit"
)

// TestEventSchema keeps docs/schema/audit-event.v1.json in step with Event.
func TestEventSchema(t *testing.T) {
	data, err := os.ReadFile("../../docs/schema/audit-event.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Enum       []string                   `json:"enum"`
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("schema is not valid JSON: %v", err)
	}
	fields := map[string]bool{} // json name -> omitempty
	for f := range reflect.TypeFor[audit.Event]().Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = strings.Contains(opts, "omitempty")
	}
	for name, omit := range fields {
		if _, ok := schema.Properties[name]; !ok {
			t.Errorf("field %q of Event is missing from the schema", name)
		}
		if !omit && !slices.Contains(schema.Required, name) {
			t.Errorf("field %q is always written but not required by the schema", name)
		}
	}
	for name := range schema.Properties {
		if _, ok := fields[name]; !ok {
			t.Errorf("schema property %q is not a field of Event", name)
		}
	}
	cov := schema.Properties["coverage"]
	for f := range reflect.TypeFor[audit.Coverage]().Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if _, ok := cov.Properties[name]; !ok {
			t.Errorf("coverage field %q is missing from the schema", name)
		}
		if !strings.Contains(opts, "omitempty") && !slices.Contains(cov.Required, name) {
			t.Errorf("coverage field %q is always written but not required", name)
		}
	}
	if n := reflect.TypeFor[audit.Coverage]().NumField(); n != len(cov.Properties) {
		t.Errorf("coverage: %d fields, %d schema properties", n, len(cov.Properties))
	}
	want := []string{string(audit.TypeCompacted), string(audit.TypeSkipped), string(audit.TypeRejected), string(audit.TypeDeadLettered)}
	if got := schema.Properties["type"].Enum; !reflect.DeepEqual(got, want) {
		t.Errorf("schema type enum = %q, want %q", got, want)
	}
	for i, ex := range schema.Examples {
		var ev audit.Event
		dec := json.NewDecoder(strings.NewReader(string(ex)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Errorf("example %d does not decode into Event: %v", i, err)
		}
		if !slices.Contains(want, string(ev.Type)) || ev.ConversationID == "" || ev.Time.IsZero() {
			t.Errorf("example %d lacks type, time or conversation_id: %+v", i, ev)
		}
	}
}
