package briefd

import (
	"errors"
	"testing"
	"unsafe"
)

func TestNumberMessages(t *testing.T) {
	if got := []string{PositionID(0), PositionID(41), PositionID(9998), PositionID(9999)}; got[0] != "m0001" || got[1] != "m0042" || got[2] != "m9999" || got[3] != "m10000" {
		t.Fatalf("position ids %v", got)
	}
	h := []Message{{Role: RoleSystem, Content: Text("s")}, {Role: RoleUser, Content: Text("u")}, {Role: RoleAssistant, Content: Text("a")}}
	out, n, err := NumberMessages(h)
	if err != nil || n != 3 || out[0].ID != "m0001" || out[2].ID != "m0003" || h[0].ID != "" {
		t.Fatalf("numbered %v (%d, %v); input ids %q", out, n, err, h[0].ID)
	}
	if err := Validate(out, Limits{}); err != nil {
		t.Fatal(err)
	}
	same, n, err := NumberMessages(out)
	if err != nil || n != 0 || &same[0] != &out[0] {
		t.Fatal("a numbered history is returned as is")
	}
	_, _, err = NumberMessages([]Message{{ID: "m0002", Role: RoleUser}, {Role: RoleUser}})
	if !errors.Is(err, ErrInvalidHistory) {
		t.Fatalf("a position id held by another message: %v", err)
	}
	// The same positions get the same strings, turn after turn.
	var nb Numberer
	a, _, _ := nb.Number(h[:2])
	b, _, _ := nb.Number(h)
	if unsafe.StringData(a[1].ID) != unsafe.StringData(b[1].ID) {
		t.Fatal("the Numberer made a new string for a known position")
	}
}
