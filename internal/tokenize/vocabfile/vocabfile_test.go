package vocabfile

import (
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	ranks := map[string]int{"a": 1, "b": 0, "ab": 2, strings.Repeat("z", MaxTokenLen): 3}
	data, err := Marshal(ranks)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != 4 || v.MaxLen != MaxTokenLen || v.Tokens != "ba"+"ab"+strings.Repeat("z", MaxTokenLen) {
		t.Fatalf("parsed %+v", v)
	}
}

func TestMarshalRejects(t *testing.T) {
	for name, ranks := range map[string]map[string]int{
		"gap":       {"a": 0, "b": 2},
		"duplicate": {"a": 0, "b": 0},
		"empty":     {"": 0},
		"too long":  {strings.Repeat("z", MaxTokenLen+1): 0},
	} {
		if _, err := Marshal(ranks); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseRejects(t *testing.T) {
	good, err := Marshal(map[string]int{"a": 0, "bc": 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"empty":        "",
		"bad magic":    "XXXXXXXX" + string(good[8:]),
		"truncated":    string(good[:len(good)-1]),
		"extra byte":   string(good) + "x",
		"zero length":  string(good[:headerSize]) + "\x00\x03" + "abc",
		"wrong maxLen": string(good[:len(Magic)+4]) + "\x05\x00\x00\x00" + string(good[headerSize:]),
	} {
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
