package client

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestExpandAnswerSchema keeps docs/schema/expand-answer.v1.json in step
// with the tool's answers and its parameters.
func TestExpandAnswerSchema(t *testing.T) {
	data, err := os.ReadFile("../docs/schema/expand-answer.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var schema struct {
		Defs struct {
			Arguments json.RawMessage `json:"arguments"`
			Range     object          `json:"range"`
			Search    object          `json:"search"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("schema is not valid JSON: %v", err)
	}
	var got, want any
	_ = json.Unmarshal(schema.Defs.Arguments, &got)
	_ = json.Unmarshal(ExpandTool().Function.Parameters, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("$defs/arguments is not the tool's parameters:\n%s\n%s", schema.Defs.Arguments, ExpandTool().Function.Parameters)
	}
	for _, c := range []struct {
		name string
		obj  object
		typ  reflect.Type
	}{{"range", schema.Defs.Range, reflect.TypeFor[expandAnswer]()}, {"search", schema.Defs.Search, reflect.TypeFor[searchAnswer]()}} {
		fields := map[string]bool{} // json name -> omitempty
		for f := range c.typ.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields[name] = strings.Contains(opts, "omitempty")
		}
		if len(fields) != len(c.obj.Properties) {
			t.Errorf("%s: %d fields, %d schema properties", c.name, len(fields), len(c.obj.Properties))
		}
		for name := range c.obj.Properties {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s: schema property %q is not a field of the answer", c.name, name)
			}
		}
		req := map[string]bool{}
		for _, name := range c.obj.Required {
			req[name] = true
		}
		for name, omit := range fields {
			if req[name] == omit {
				t.Errorf("%s: field %q: omitempty %v, required %v", c.name, name, omit, req[name])
			}
		}
	}
}
