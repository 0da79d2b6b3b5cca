package brief

import (
	"slices"
	"testing"
)

// Sentences run together without a space after a closing parenthesis or
// backtick are split; a dotted name in code is not.
func TestSentencesWithoutSpace(t *testing.T) {
	text := "It uses phi = (p-1)*(q-1) (Euler's totient).The code then sends `n`.The weakness likely lies within the small exponent. Call sympy.Array(3) here."
	want := []string{"It uses phi = (p-1)*(q-1) (Euler's totient).", "The code then sends `n`.",
		"The weakness likely lies within the small exponent.", "Call sympy.Array(3) here."}
	if got := sentences(text); !slices.Equal(got, want) {
		t.Errorf("sentences:\n got %q\nwant %q", got, want)
	}
}

// A decision that opens on its premises, or ends on a sentence that
// concludes from them, is quoted from the clause that decides when the
// whole does not fit; other sentences keep their start,
// which names their subject.
func TestClipNote(t *testing.T) {
	given := "Given that RSA-1024 is currently not factorizable within a reasonable time, the weakness in the challenge likely lies within the small exponent (`e = 5`)."
	if !isDecision(given) {
		t.Fatalf("not read as a decision: %q", given)
	}
	if got, want := clipNote(given, 100), "… the weakness in the challenge likely lies within the small exponent (`e = 5`)."; got != want {
		t.Errorf("clipNote(given):\n got %q\nwant %q", got, want)
	}
	premise := "If `self.options` is a `dict`, `self.options.private_members` would raise AttributeError. So `self.options` must be an object that handles missing attributes, or `private-members` is always present."
	if got, want := clipNote(premise, 100), "… So `self.options` must be an object that handles missing attributes, or `private-members` is…"; got != want {
		t.Errorf("clipNote(premise):\n got %q\nwant %q", got, want)
	}
	subject := "If `ClassDocumenter.add_content` is used, it overwrites `more_content`. This looks suspicious because it replaces it entirely."
	if got := clipNote(subject, 60); got[:4] != "If `" {
		t.Errorf("clipNote(subject) lost the subject: %q", got)
	}
}

// A capital selector after a call in prose is not a new sentence.
func TestSentencesKeepSelectors(t *testing.T) {
	text := "The bug is that reflect.ValueOf(v).Elem is nil because the pointer was never set."
	if got := sentences(text); len(got) != 1 {
		t.Errorf("sentences split a selector: %q", got)
	}
}
