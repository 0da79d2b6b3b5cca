package ident

import (
	"slices"
	"strings"
	"testing"
)

// Snippets taken from the shared histories (tau-bench, mini-swe-agent,
// SWE-agent, OpenHands): each lists the identifiers Identifiers must find
// (recall) and words it must not return (precision).
func TestIdentifiersSnippets(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string // exactly these, in order of first appearance
	}{
		{"reservation", "Of course. My reservation ID is HXDUBJ.", nil},
		{"codes starting with a digit", "Reservations 8C8K4E and 4XGCCM, not 3rd or 2nd or 64bit or 1080p.", []string{"8C8K4E", "4XGCCM"}},
		{"email", "Sure, my email address is yara_garcia_1905@example.com.", []string{"yara_garcia_1905@example.com"}},
		{"payment ids", `{"payment_methods": {"gift_card_6941833": {"source": "gift_card", "amount": 142}, "certificate_2345996": {"amount": 250}}}`,
			[]string{"gift_card_6941833", "certificate_2345996"}},
		{"flights and dates", "Flight HAT278 departs 2024-05-18 at 09:00; the return HAT085 is on 2024-05-22.",
			[]string{"HAT278", "2024-05-18", "HAT085", "2024-05-22"}},
		{"shell read", "nl -ba django/core/serializers/base.py | sed -n '325,347p'",
			[]string{"django/core/serializers/base.py"}},
		{"absolute paths", "File \"/testbed/django/db/models/fields/related_descriptors.py\", line 187, in __get__",
			[]string{"/testbed/django/db/models/fields/related_descriptors.py"}},
		{"pip pin", "pip install -e . && pip install pytest-xdist==1.34.0", []string{"1.34.0"}},
		{"urls", "See https://code.djangoproject.com/ticket/32744 and https://github.com/django/django/commit/68357b2ca9e88c40fc00d848799813241be39129.",
			[]string{"https://code.djangoproject.com/ticket/32744", "https://github.com/django/django/commit/68357b2ca9e88c40fc00d848799813241be39129"}},
		{"versions", "Running tests with Astropy version 4.0.dev24590. Matplotlib: 3.9.2, Freetype: 2.6.1, go v1.22",
			[]string{"4.0.dev24590", "3.9.2", "2.6.1", "v1.22"}},
		{"error codes", "reproduce.py:3:1: E501 line too long; SystemCheckError: auth.E003 'username' must be unique",
			[]string{"reproduce.py", "E501", "SystemCheckError", "auth.E003"}},
		{"exception line", "TypeError: type() takes 1 or 3 arguments", []string{"TypeError"}},
		{"short exception-like words", "an Error occurred; MyError", nil},
		{"backticks", "The fix goes in `deserialize_fk_value`, not in `the` helper; `Model(**data)` stays.",
			[]string{"deserialize_fk_value"}},
		{"numbers of note", "-rw-r--r-- 1 root root 12288 Oct 24 2024 tox.ini, took 0.004s, 300ms, page 7 of 42",
			[]string{"12288", "2024", "tox.ini", "0.004s", "300ms"}},
		{"instance and hash", "django__django-11138 at commit 2f72480fbd27896c986c45193e1603e35c0b19a7, uuid 123e4567-e89b-12d3-a456-426614174000",
			[]string{"django__django-11138", "2f72480fbd27896c986c45193e1603e35c0b19a7", "123e4567-e89b-12d3-a456-426614174000"}},
		{"closing tags", "<returncode>0</returncode>\n<output>\nok\n</output>", nil},
		{"prose", "I need to understand the structure of the repository first. Let's look at it/them and/or the tests.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Identifiers(tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Identifiers(%q)\n got %q\nwant %q", tt.text, got, tt.want)
			}
			for _, id := range got {
				if !strings.Contains(tt.text, id) {
					t.Errorf("%q is not a substring of the text", id)
				}
			}
		})
	}
}

// Every identifier is a substring of its text, found once, whatever the
// input (no panic on odd bytes).
func FuzzIdentifiers(f *testing.F) {
	for _, s := range []string{"a/b.py `x_1` v1.2.3 https://x.io/a).", "\xff\xfe`", "..//--@@", "`" + strings.Repeat("a", 100) + "`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seen := map[string]bool{}
		for _, id := range Identifiers(s) {
			if !strings.Contains(s, id) || seen[id] {
				t.Fatalf("bad identifier %q of %q", id, s)
			}
			seen[id] = true
		}
	})
}
