package queue_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
)

// TestSnapshotSchema keeps docs/schema/snapshot.v1.json in step with
// Manifest and briefd.Control, and checks that its examples decode.
func TestSnapshotSchema(t *testing.T) {
	data, err := os.ReadFile("../../docs/schema/snapshot.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	type props map[string]struct {
		Enum       []string `json:"enum"`
		Properties props    `json:"properties"`
	}
	var schema struct {
		Required   []string          `json:"required"`
		Properties props             `json:"properties"`
		Examples   []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("schema is not valid JSON: %v", err)
	}
	check := func(what string, typ reflect.Type, p props, required []string) {
		names := map[string]bool{}
		for f := range typ.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			names[name] = true
			if _, ok := p[name]; !ok {
				t.Errorf("%s: field %q is missing from the schema", what, name)
			}
			if required != nil && !strings.Contains(opts, "omitempty") && !slices.Contains(required, name) {
				t.Errorf("%s: field %q is always written but not required", what, name)
			}
		}
		for name := range p {
			if !names[name] {
				t.Errorf("%s: schema property %q is not a field", what, name)
			}
		}
	}
	check("manifest", reflect.TypeFor[queue.Manifest](), schema.Properties, schema.Required)
	check("control", reflect.TypeFor[briefd.Control](), schema.Properties["control"].Properties, nil)
	want := []string{string(briefd.ModeAuto), string(briefd.ModeNow), string(briefd.ModeNever)}
	if got := schema.Properties["control"].Properties["mode"].Enum; !slices.Equal(got, want) {
		t.Errorf("control mode enum %q, want %q", got, want)
	}
	for i, ex := range schema.Examples {
		if _, err := queue.DecodeManifest(ex); err != nil {
			t.Errorf("example %d: %v", i, err)
		}
	}
}
