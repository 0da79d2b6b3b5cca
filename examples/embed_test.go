package examples

import "testing"

func TestHistories(t *testing.T) {
	hs, err := Histories()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) < 3 {
		t.Fatalf("got %d histories, want at least 3", len(hs))
	}
	for _, h := range hs {
		if h.ID == "" || h.Source == "" || h.License == "" || len(h.Messages) == 0 {
			t.Errorf("history %q lacks id, source, license or messages", h.ID)
		}
	}
}
