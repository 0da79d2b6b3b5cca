package brief

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
	"github.com/briefd/briefd/internal/tokenize"
)

func counter(t testing.TB) func(string) int {
	t.Helper()
	enc, err := tokenize.Get("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	return enc.Count
}

// span builds messages from a compact script: "u:text" a user message,
// "a:text" assistant text, "c:tool:args" a call by the last assistant
// message (answered by the next "r:text").
type spanBuilder struct {
	msgs []briefd.Message
	n    int
	call int
}

func (b *spanBuilder) id() string {
	b.n++
	return fmt.Sprintf("m%04d", b.n+2)
}

func (b *spanBuilder) user(text string) *spanBuilder {
	b.msgs = append(b.msgs, briefd.Message{ID: b.id(), Role: briefd.RoleUser, Content: briefd.Text(text)})
	return b
}

func (b *spanBuilder) say(text string) *spanBuilder {
	b.msgs = append(b.msgs, briefd.Message{ID: b.id(), Role: briefd.RoleAssistant, Content: briefd.Text(text)})
	return b
}

// step is an assistant message with one call and its result.
func (b *spanBuilder) step(thought, tool, args, result string) *spanBuilder {
	b.call++
	cid := fmt.Sprintf("call_%d", b.call)
	b.msgs = append(b.msgs,
		briefd.Message{ID: b.id(), Role: briefd.RoleAssistant, Content: briefd.Text(thought),
			ToolCalls: []briefd.ToolCall{{ID: cid, Type: "function", Function: briefd.FunctionCall{Name: tool, Arguments: args}}}},
		briefd.Message{ID: b.id(), Role: briefd.RoleTool, ToolCallID: cid, Content: briefd.Text(result)})
	return b
}

func (b *spanBuilder) bash(thought, cmd, result string) *spanBuilder {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return b.step(thought, "bash", string(args), result)
}

func rc(code int, out string) string {
	return fmt.Sprintf("<returncode>%d</returncode>\n<output>\n%s\n</output>", code, out)
}

func write(t *testing.T, span []briefd.Message, budget int) *Draft {
	t.Helper()
	d, err := Write(context.Background(), Input{Span: span, BudgetTokens: budget, CountTokens: counter(t)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustContain(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("briefing lacks %q:\n%s", w, text)
		}
	}
}

func mustNotContain(t *testing.T, text string, bad ...string) {
	t.Helper()
	for _, w := range bad {
		if strings.Contains(text, w) {
			t.Errorf("briefing has %q:\n%s", w, text)
		}
	}
}

// The rules of ../shared/exemplars, each on the smallest span that shows it.
// syntaxTrace is Python's report of a syntax error in constraints.py at
// line, quoting its source.
func syntaxTrace(line, source string) string {
	return "Traceback (most recent call last):\n  File \"/testbed/run.py\", line 3, in <module>\n    import constraints\n" +
		"  File \"/testbed/constraints.py\", line " + line + "\n    " + source + "\n    ^\nIndentationError: unexpected indent\n"
}

func TestHandOffRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		build    func(b *spanBuilder) // the span
		budget   int
		wanted   []string // in the briefing
		unwanted []string // not in it
	}{
		{
			name: "a call repeated with the same answer is told once, naming the first",
			build: func(b *spanBuilder) {
				out := "[" + flight("HAT072", "IAH", "SFO", "09:00", "13:00", 130, 282) + ", " + flight("HAT180", "IAH", "SFO", "07:00", "11:00", 130, 346) + "]"
				back := "[" + flight("HAT082", "SFO", "IAH", "23:00", "03:00", 164, 323) + ", " + flight("HAT278", "SFO", "IAH", "16:00", "20:00", 187, 443) + "]"
				there, again := `{"origin": "IAH", "destination": "SFO", "date": "2024-05-19"}`, `{"origin": "SFO", "destination": "IAH", "date": "2024-05-23"}`
				b.step("", "search_direct_flight", there, out).step("", "search_direct_flight", again, back).
					say("Here are the flights.").user("Any after 8am?").
					step("", "search_direct_flight", there, out).step("", "search_direct_flight", again, back)
			},
			budget: 900,
			wanted: []string{"[m0009] search_direct_flight(origin=IAH, destination=SFO, date=2024-05-19) (same answer as m0003) → 2 records (columns: departure-arrival; prices (economy, business)): HAT072 09:00-13:00, 130/282 | HAT180 07:00-11:00, 130/346",
				"[m0011] search_direct_flight(origin=SFO, destination=IAH, date=2024-05-23) (same answer as m0005) → 2 records"},
			unwanted: []string{"[m0003] search_direct_flight", "[m0005] search", "LEFT OUT"},
		},
		{
			name: "a search whose names the index would list bare takes their room, with its prices",
			build: func(b *spanBuilder) {
				a, c := flight("HAT069", "JFK", "SEA", "06:00", "12:00", 123, 333), flight("HAT083", "JFK", "SEA", "01:00", "07:00", 137, 485)
				x, y := flight("HAT011", "SEA", "SFO", "13:00", "15:00", 177, 294), flight("HAT258", "SEA", "SFO", "17:00", "19:00", 167, 417)
				z := flight("HAT274", "SEA", "SFO", "20:00", "22:00", 198, 349)
				pair := func(p, q string) string { return "[" + p + ", " + q + "]" }
				out := "[" + strings.Join([]string{pair(a, x), pair(a, y), pair(a, z), pair(c, x), pair(c, z)}, ", ") + "]"
				b.user("My user ID is aarav_ahmed_6699. I'd like to book a new flight from JFK to SFO on May 24th, the second cheapest flight in economy class.").
					step("", "get_user_details", `{"user_id":"aarav_ahmed_6699"}`, `{"name": {"first_name": "Aarav", "last_name": "Ahmed"}, "payment_methods": {"credit_card_9074831": {"source": "credit_card", "brand": "mastercard", "last_four": "7334", "id": "credit_card_9074831"}, "certificate_9645872": {"source": "certificate", "amount": 250, "id": "certificate_9645872"}}, "membership": "silver", "reservations": ["M20IZO", "N6F783"]}`).
					say("Could you confirm the trip type and passengers?").
					user("One way, just me. I'll pay with my credit card ending in 7334.").
					step("", "search_onestop_flight", `{"origin": "JFK", "destination": "SFO", "date": "2024-05-24"}`, out)
			},
			// Without the rule the index's reserve keeps the search out and
			// lists its flights bare: "ALSO MENTIONED (…): HAT069, HAT011, …".
			budget:   330,
			wanted:   []string{"[m0008] search_onestop_flight(JFK, SFO, 2024-05-24) → 5 options of 2 parts (economy price of each): HAT069 123 then HAT011 177, HAT258 167 or HAT274 198; HAT083 137 then HAT011 177 or HAT274 198"},
			unwanted: []string{"ALSO MENTIONED", "1 lookup at m0008"},
		},
		{
			name: "a listing waits for the richer detail of what matters more: the reason for an undo, whole",
			build: func(b *spanBuilder) {
				b.bash("Look around.", "ls -R django/db/models/fields", rc(0, "__init__.py\nfiles.py\nmixins.py\nproxy.py\nrelated.py\nrelated_descriptors.py\nrelated_lookups.py\nreverse_related.py")).
					bash("Fix it everywhere.", "sed -i 's/_default_manager/_base_manager/' django/db/models/fields/related.py", rc(0, "")).
					bash("THOUGHT: This seems wrong based on \"default should avoid archived articles\". So I should revert changes to lines 987 and 1671 and keep only line 917.", "git checkout django/db/models/fields/related.py", rc(0, "")).
					bash("Only the validate line.", "sed -i '917s/_default_manager/_base_manager/' django/db/models/fields/related.py", rc(0, "")).
					bash("Check.", "python reproduce_issue.py", rc(0, "Form is valid"))
			},
			// Before: the listing took its least detail first, and the
			// reason was cut at "So I should revert changes to…".
			budget:   310,
			wanted:   []string{"So I should revert changes to lines 987 and 1671 and keep only line 917.", "LEFT OUT FOR SIZE: 1 listing at m0003."},
			unwanted: []string{"- [m0003] ls -R"},
		},
		{
			name: "a profile's contact details come after its tier; a tier the user claimed is kept as the record says it",
			build: func(b *spanBuilder) {
				b.user("I'm a silver member, so I should get a full refund. My user ID is aarav_ahmed_6699.").
					step("", "get_user_details", `{"user_id":"aarav_ahmed_6699"}`, `{"name": {"first_name": "Aarav", "last_name": "Ahmed"}, "address": {"address1": "176 Willow Lane", "address2": "Suite 431", "city": "Los Angeles", "country": "USA", "zip": "90009"}, "email": "aarav.ahmed6812@example.com", "dob": "1981-05-26", "payment_methods": {"credit_card_9074831": {"source": "credit_card", "brand": "mastercard", "last_four": "7334", "id": "credit_card_9074831"}}, "membership": "silver", "reservations": ["M20IZO", "N6F783"]}`).
					say("I see your profile.")
			},
			budget: 900,
			// Before: "…; address 176 Willow Lane Suite 431; email …; dob
			// 1981-05-26", and no membership (the user had said "silver").
			wanted:   []string{"membership silver; address 176 Willow Lane Suite 431; email aarav.ahmed6812@example.com\n", "(4 messages, 1 tool call)"},
			unwanted: []string{"- aarav_ahmed_6699 [m0004]: address"},
		},
		{
			name: "a script's per-case verdicts are counted beside its first line",
			build: func(b *spanBuilder) {
				out := "Testing ImmutableDenseNDimArray...\n  Scalar: len(a) = 1, shape = ()\n  1D: len(b) = 3, shape = (3,)\n  ImmutableDenseNDimArray passed.\n" +
					"Testing MutableDenseNDimArray...\n  Scalar: len(a) = 1, shape = ()\n  1D: len(b) = 3, shape = (3,)\n  MutableDenseNDimArray passed."
				b.bash("Fix.", "sed -i 's/if shape else 0/if shape else 1/' sympy/dense.py", rc(0, "")).
					bash("Test.", "python3 test_fix.py", rc(0, out))
			},
			budget: 900,
			wanted: []string{"last check after the last change: [m0005] python3 test_fix.py → Scalar: len(a) = 1, shape = () … 2 lines say passed (8 lines)"},
		},
		{
			name: "a patch applied from a patch file is a step: the patch file is not what changed",
			build: func(b *spanBuilder) {
				b.bash("Apply it.", "git apply fix.patch", rc(0, "")).
					bash("Test.", "python -m pytest tests/test_a.py -q", rc(0, "3 passed in 0.1s"))
			},
			budget:   900,
			wanted:   []string{"[m0003] git apply fix.patch"},
			unwanted: []string{"changed: fix.patch", "- fix.patch:"},
		},
		{
			name: "the last check's result is quoted by STATE alone; its step and its script's line point there",
			build: func(b *spanBuilder) {
				b.bash("Write the reproduction.", "cat > repro.py <<'EOF'\nimport pixels\npixels.decode()\nEOF", rc(0, "")).
					bash("Fix it.", "sed -i 's/required = True/required = False/' pixels.py", rc(0, "")).
					bash("Check.", "python repro.py", rc(1, "AttributeError: Unable to convert the pixel data as the following required elements are missing: PixelRepresentation"))
			},
			budget: 900,
			wanted: []string{"last check after the last change: [m0007] python repro.py → exit 1: AttributeError: Unable to convert the pixel data",
				"- [m0007] python repro.py → the last check, in STATE", "last run [m0007] → the last check, in STATE"},
			unwanted: []string{"- [m0007] python repro.py → exit 1", "last run [m0007] → exit 1", "nothing that existed before"},
		},
		{
			name: "a run that fails before any file that was there changed is told as such",
			build: func(b *spanBuilder) {
				b.bash("Write the reproduction.", "cat > repro.py <<'EOF'\nimport pixels\npixels.decode()\nEOF", rc(0, "")).
					bash("Run it.", "python repro.py", rc(1, "AttributeError: PixelRepresentation is missing"))
			},
			budget: 900,
			wanted: []string{"- changed: nothing that existed before; created and still present: repro.py\n",
				"last check after the last change: [m0005] python repro.py → exit 1: AttributeError: PixelRepresentation is missing — still failing"},
		},
		{
			name: "an edit undone since may be what fails: no 'nothing that existed before'",
			build: func(b *spanBuilder) {
				b.bash("Write the reproduction.", "cat > repro.py <<'EOF'\nimport pixels\npixels.decode()\nEOF", rc(0, "")).
					bash("Try a fix.", "sed -i '5i\\    x = 1' pixels.py", rc(0, "")).
					bash("Run it.", "python repro.py", rc(1, "IndentationError: expected an indented block")).
					bash("Undo.", "git checkout pixels.py", rc(0, ""))
			},
			budget:   900,
			wanted:   []string{"created and still present: repro.py"},
			unwanted: []string{"nothing that existed before"},
		},
		{
			name: "a patch applied, whose files the step does not name, may be what fails: no 'nothing that existed before'",
			build: func(b *spanBuilder) {
				b.bash("Write the reproduction.", "cat > repro.py <<'EOF'\nimport pixels\npixels.decode()\nEOF", rc(0, "")).
					bash("Apply the fix.", "git apply fix.patch", rc(0, "")).
					bash("Run it.", "python repro.py", rc(1, "AttributeError: PixelRepresentation is missing"))
			},
			budget:   900,
			wanted:   []string{"created and still present: repro.py"},
			unwanted: []string{"nothing that existed before"},
		},
		{
			name: "an edit the steps are not read for may be what fails: no 'nothing that existed before'",
			build: func(b *spanBuilder) {
				b.bash("Write the reproduction.", "cat > repro.py <<'EOF'\nimport pixels\npixels.decode()\nEOF", rc(0, "")).
					bash("Try a fix.", "perl -pi -e 's/required = True/required = False/' pixels.py", rc(0, "")).
					bash("Run it.", "python repro.py", rc(1, "AttributeError: PixelRepresentation is missing"))
			},
			budget:   900,
			wanted:   []string{"created and still present: repro.py"},
			unwanted: []string{"nothing that existed before"},
		},
		{
			name: "a failure seen again is told by the step that first showed it; the same message elsewhere is another error",
			build: func(b *spanBuilder) {
				crash := func(line string) string {
					return "Traceback (most recent call last):\n  File \"/testbed/src/terminal.py\", line " + line + ", in _folded_skips\n" +
						"TypeError: object of type 'ExceptionChainRepr' has no len()"
				}
				b.bash("Fix it.", "sed -i 's/a/b/' src/skipping.py", rc(0, "")).
					bash("Run.", "pytest -rsx repro.py", rc(1, crash("1251"))).
					bash("Debug.", "sed -i '1250a print(1)' src/terminal.py", rc(0, "")).
					bash("Run.", "pytest -rsx repro.py", rc(1, "DEBUG: 1\n"+crash("1252"))).
					bash("Fix the syntax.", "sed -i 's/c/d/' src/terminal.py", rc(0, "")).
					bash("Run.", "pytest -rsx repro.py", rc(1, syntaxTrace("135", "x = 1"))).
					bash("Other.", "python other.py", rc(0, "ok")).
					bash("Again.", "sed -i 's/e/f/' constraints.py", rc(0, "")).
					bash("Run.", "pytest -rsx repro.py", rc(1, syntaxTrace("144", "y = 2")))
			},
			budget: 1500,
			wanted: []string{"- [m0005] pytest -rsx repro.py → exit 1: TypeError: object of type 'ExceptionChainRepr' has no len() (at /testbed/src/terminal.py line 1251 in _folded_skips)",
				"- [m0009] pytest -rsx repro.py → exit 1: the same error as [m0005]: TypeError: object of type 'ExceptionChainRepr' has no len()",
				"- [m0019] pytest -rsx repro.py → the last check, in STATE (at /testbed/constraints.py line 144)",
				// ERRORS gives where it is raised now, below the debug print.
				"has no len() (at /testbed/src/terminal.py line 1252 in _folded_skips) [m0005, m0009]"},
			unwanted: []string{"the same error as [m0013]"},
		},
		{
			name: "a data file read whole, too long to quote, is told by how it begins",
			build: func(b *spanBuilder) {
				b.bash("Read it.", "cat eps1.1_ones-and-zer0es_c4368e65e1883044f3917485ec928173.mpeg", strings.Repeat("0110011001101100", 96)).
					bash("Next.", "cat notes.md", "# Notes\n"+strings.Repeat("Some prose about the challenge.\n", 30))
			},
			budget:   600,
			wanted:   []string{"eps1.1_ones-and-zer0es_c4368e65e1883044f3917485ec928173.mpeg: read whole [m0003]; begins `0110011001101100"},
			unwanted: []string{"notes.md: read whole [m0005]; begins"},
		},
		{
			name: "a listing that says what each name is keeps the saying, the long names shortened",
			build: func(b *spanBuilder) {
				b.bash("What are they?", "file ./*", "./eps1.1_ones-and-zer0es_c4368e65e1883044f3917485ec928173.mpeg: ASCII text, with very long lines (1544)\n"+
					"./eps1.7_wh1ter0se_2b007cf0ba9881d954e85eb475d0d5e4.m4v:        ASCII text, with very long lines (360)\n"+
					"./eps1.9_zer0-day_b7604a922c8feef666a957933751a074.avi:         ASCII text, with very long lines (1136)").
					bash("Read it.", "cat ./eps1.7_wh1ter0se_2b007cf0ba9881d954e85eb475d0d5e4.m4v", strings.Repeat("EOY XF, AY VMU M UKFNY TOY. ", 12))
			},
			budget: 600,
			wanted: []string{"[m0003] file ./* → eps1.1_ones-an…173.mpeg: ASCII text, with very long lines (1544) | eps1.7_wh1ter0…d5e4.m4v: ASCII text"},
		},
		{
			name: "a record's items keep their route and price where there is room",
			build: func(b *spanBuilder) {
				b.user("Change my reservation 8C8K4E to a later flight.").
					step("", "get_reservation_details", `{"reservation_id": "8C8K4E"}`, `{"reservation_id": "8C8K4E", "origin": "BOS", "destination": "DEN", "cabin": "economy", "flights": [`+
						`{"origin": "BOS", "destination": "MIA", "flight_number": "HAT247", "date": "2024-05-24", "price": 904}, `+
						`{"origin": "MIA", "destination": "DEN", "flight_number": "HAT193", "date": "2024-05-24", "price": 1906}], "insurance": "no"}`)
			},
			budget: 900,
			wanted: []string{"8C8K4E [m0004]: BOS-DEN; economy; HAT247 BOS-MIA 2024-05-24 904, HAT193 MIA-DEN 2024-05-24 1906"},
		},
		{
			name: "a trip of its own shape reads as a table's row, its legs by their ids and days where room is short",
			build: func(b *spanBuilder) {
				b.user("My reservation is XEWRD9.").
					step("", "get_reservation_details", `{"reservation_id": "XEWRD9"}`, `{"reservation_id": "XEWRD9", "user_id": "james_lee_6136", "origin": "LAX", "destination": "ATL", "flight_type": "round_trip", "cabin": "basic_economy", "flights": [`+
						`{"origin": "LAX", "destination": "ORD", "flight_number": "HAT030", "date": "2024-05-13", "price": 92}, `+
						`{"origin": "ORD", "destination": "ATL", "flight_number": "HAT223", "date": "2024-05-14", "price": 100}, `+
						`{"origin": "ATL", "destination": "DFW", "flight_number": "HAT252", "date": "2024-05-21", "price": 75}, `+
						`{"origin": "DFW", "destination": "LAX", "flight_number": "HAT124", "date": "2024-05-21", "price": 96}], `+
						`"passengers": [{"first_name": "James", "last_name": "Lee", "dob": "1995-06-11"}, {"first_name": "Mason", "last_name": "Lopez", "dob": "1966-03-13"}], `+
						`"payment_history": [{"payment_id": "gift_card_4643416", "amount": 786}], "created_at": "2024-05-07T19:17:06", "total_baggages": 0, "nonfree_baggages": 0, "insurance": "yes"}`)
			},
			budget: 280,
			wanted: []string{"- XEWRD9 [m0004]: user_id james_lee_6136; LAX-ATL; round_trip; basic_economy; HAT030 2024-05-13, HAT223 2024-05-14, HAT252, HAT124 2024-05-21;",
				"created_at 2024-05-07T19:17;"},
			unwanted: []string{"origin LAX", "flight_type", "HAT030 LAX-ORD"},
		},
		{
			name: "an error raised again in another function is told whole, in STEPS and ERRORS: the run got further",
			build: func(b *spanBuilder) {
				keyErr := func(file, line, fn string) string {
					return "Traceback (most recent call last):\n  File \"/testbed/" + file + "\", line " + line + ", in " + fn + "\nKeyError: 'name'"
				}
				b.bash("Run.", "python repro.py", rc(1, keyErr("utils.py", "10", "parse"))).
					bash("Fix.", "sed -i 's/a/b/' utils.py", rc(0, "")).
					bash("Run.", "python repro.py", rc(1, keyErr("models.py", "88", "save"))).
					bash("Other.", "python other.py", rc(0, "ok"))
			},
			budget: 1500,
			wanted: []string{"- [m0007] python repro.py → exit 1: KeyError: 'name' (at /testbed/models.py line 88 in save)",
				"KeyError: 'name' (at /testbed/models.py line 88 in save) [m0003, m0007]: unresolved"},
			unwanted: []string{"the same error as", "(at /testbed/utils.py line 10 in parse) [m0003, m0007]"},
		},
		{
			name: "the last check's step keeps where its error was raised, pointing at STATE for the rest",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/a/b/' pixels.py", rc(0, "")).
					bash("Check.", "python repro.py", rc(1, "Traceback (most recent call last):\n  File \"/testbed/pixels.py\", line 46, in decode\n"+
						"AttributeError: Unable to convert the pixel data as the following required elements are missing: PixelRepresentation"))
			},
			budget: 900,
			wanted: []string{"- [m0005] python repro.py → the last check, in STATE (at /testbed/pixels.py line 46 in decode)"},
		},
		{
			name: "the state quotes the last check's first line: its step tells the lines after it",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/a/b/' pixels.py", rc(0, "")).
					bash("Check.", "python repro.py", rc(1, "reproduce_app.CustomUser: (auth.E003) 'CustomUser.username' must be unique because it is named as the 'USERNAME_FIELD'.\nReproduced auth.E003"))
			},
			budget:   900,
			wanted:   []string{"- [m0005] python repro.py → the last check, in STATE, then: Reproduced auth.E003"},
			unwanted: []string{"'USERNAME_FIELD'. | Reproduced"},
		},
		{
			name: "a check whose command reads an arrow is not pointed to: a folded briefing finds the result after the first arrow",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/a/b/' pixels.py", rc(0, "")).
					bash("Check.", "echo '== before → after ==' && python repro.py", rc(1, "AttributeError: Unable to convert the pixel data as the following required elements are missing: PixelRepresentation"))
			},
			budget:   900,
			unwanted: []string{"the last check, in STATE"},
		},
		{
			name: "what a pipe made of a file is not how the file begins, nor its content; a data file's own numbers are its content",
			build: func(b *spanBuilder) {
				b.bash("Decode.", "cat cipher.txt | base64 -d", strings.Repeat("Some secret text, decoded. ", 30)).
					bash("Read.", "cat pi.txt", "3:"+strings.Repeat("1415926535", 60)).
					bash("Decode the key.", "cat key.txt | base64 -d", "hunter2")
			},
			budget:   900,
			wanted:   []string{"pi.txt: read whole [m0005]; begins `3:1415926535"},
			unwanted: []string{"cipher.txt: read whole [m0003]; begins", "key.txt: read whole [m0007]; content"},
		},
		{
			name: "names a listing would shorten alike are kept whole",
			build: func(b *spanBuilder) {
				b.bash("What are they?", "file ckpt/*", "ckpt/checkpoint_epoch_10_step_500_final.pt: Zip archive data\n"+
					"ckpt/checkpoint_epoch_20_step_500_final.pt: empty\nckpt/checkpoint_epoch_30_step_500_final.pt: Zip archive data")
			},
			budget: 600,
			wanted: []string{"ckpt/checkpoint_epoch_20_step_500_final.pt: empty"},
		},
		{
			name: "ls of one file that prints its name back says the file exists",
			build: func(b *spanBuilder) {
				b.bash("Is it there?", "ls -R django/db/models/fields/related.py", rc(0, "django/db/models/fields/related.py")).
					bash("And the tests?", "ls tests", rc(0, "test_a.py\ntest_b.py"))
			},
			budget:   600,
			wanted:   []string{"- [m0003] ls -R django/db/models/fields/related.py → exists", "- [m0005] ls tests → test_a.py test_b.py"},
			unwanted: []string{"→ django/db/models/fields/related.py"},
		},
		{
			name: "a message that only asked, and was answered, is the first of the agent's remarks to give way",
			build: func(b *spanBuilder) {
				lookup := func(i int) {
					id := fmt.Sprintf("R%05d", i)
					b.step("", "get_reservation_details", `{"reservation_id": "`+id+`"}`, `{"reservation_id": "`+id+`", "origin": "IAH", "destination": "DEN", "cabin": "economy", "insurance": "no", "status": "active", `+
						`"flights": [{"flight_number": "HAT`+fmt.Sprint(100+i)+`", "origin": "IAH", "destination": "DEN", "date": "2024-05-2`+fmt.Sprint(i)+`", "price": `+fmt.Sprint(120+i)+`}], `+
						`"passengers": [{"first_name": "Sofia", "last_name": "Kim"}, {"first_name": "Mia", "last_name": "Jackson"}], "created_at": "2024-05-0`+fmt.Sprint(i+1)+`T10:00:00"}`)
				}
				b.say("Since your reservation is basic economy without insurance, it cannot be cancelled for a refund; I can change its flights instead.").
					user("Fine, change it then.")
				for i := range 3 {
					lookup(i)
				}
				b.say("I can help you with that. Could you please provide the new date?").
					user("The 25th.")
				for i := 3; i < 6; i++ {
					lookup(i)
				}
			},
			budget:   430,
			wanted:   []string{"to the user: Since your reservation is basic economy", "the agent's remarks in m0011"},
			unwanted: []string{"Could you please provide the new date"},
		},
		{
			name: "a last check whose output reads (at …) is not cut there",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/a/b/' conf.py", rc(0, "")).
					bash("Check.", "python repro.py", rc(0, "Parsed the configuration file and found 3 sections (at offset 0x40 in header)\nValidated all entries against the schema without errors"))
			},
			budget:   900,
			unwanted: []string{"in STATE (at offset"},
		},
		{
			name: "ls that does more than echo one name is not told as exists",
			build: func(b *spanBuilder) {
				b.bash("Executable?", "ls -l run_tests.sh", rc(0, "-rw-r--r-- 1 root root 5120 May  2 10:00 run_tests.sh")).
					bash("Config?", "ls setup.cfg pyproject.toml tox.ini 2>/dev/null", "setup.cfg").
					bash("Both?", "ls emptydir; ls notes.txt", rc(0, "notes.txt"))
			},
			budget:   900,
			unwanted: []string{"→ exists"},
		},
		{
			name: "items whose from and to are not places are not joined into a route",
			build: func(b *spanBuilder) {
				b.user("Show my transfers.").
					step("", "get_account_details", `{"account_id": "acc_1001"}`, `{"account_id": "acc_1001", "status": "open", "transfers": [`+
						`{"transfer_id": "tr_501", "from": "acc_1001", "to": "acc_2002", "amount": 250, "date": "2024-05-02"}, `+
						`{"transfer_id": "tr_502", "from": "2024-05-01", "to": "2024-05-07", "amount": 90, "date": "2024-05-03"}]}`)
			},
			budget:   900,
			wanted:   []string{"tr_501 250 2024-05-02", "tr_502"},
			unwanted: []string{"acc_1001-acc_2002", "2024-05-01-2024-05-07"},
		},
		{
			name: "a table's header tells the items every row shares by ids and dates at the shorter levels",
			build: func(b *spanBuilder) {
				b.user("Which of my reservations can I cancel?")
				for _, id := range []string{"AAA111", "BBB222", "CCC333"} {
					b.step("", "get_reservation_details", `{"reservation_id": "`+id+`"}`, `{"reservation_id": "`+id+`", "origin": "IAH", "destination": "DEN", "cabin": "economy", "insurance": "no", "status": "active", `+
						`"flights": [{"flight_number": "HAT100", "origin": "IAH", "destination": "DEN", "date": "2024-05-20", "price": 120}], "created_at": "2024-05-0`+id[5:]+`T10:00:00"}`)
				}
				for i := range 8 {
					b.bash("Look.", fmt.Sprintf("cat notes%d.txt", i), strings.Repeat("a line of notes about nothing in particular\n", 12))
				}
			},
			budget:   300,
			wanted:   []string{"flights HAT100 2024-05-20;"},
			unwanted: []string{"HAT100 IAH-DEN"},
		},
		{
			name: "a long run of hex digits is told by its ends and length, so the rest of its line shows",
			build: func(b *spanBuilder) {
				c, n := strings.Repeat("A76EDD72", 32), strings.Repeat("CE3205AE", 32)
				b.bash("Get one.", "connect_sendline Y", `{"time_capsule": "`+c+`", "pubkey": ["`+n+`", "5"]}`+"\nWelcome to Qubit Enterprises. Would you like your own time capsule? (Y/n)")
			},
			budget: 600,
			wanted: []string{`{"time_capsule": "A76EDD72…A76EDD72 (256 hex digits)", "pubkey": ["CE3205AE…CE3205AE (256 hex digits)", "5"]}`},
		},
		{
			name: "a long run of hex digits in a line that fits is kept as it is; a long decimal number is not hex",
			build: func(b *spanBuilder) {
				key := strings.Repeat("9f3ac07d", 12)
				b.bash("Write it.", "cat > solve.py <<'EOF'\nct = bytes.fromhex(\""+key+"\")\nprint(ct)\nEOF", rc(0, "")).
					bash("Factorial.", "python calc.py", rc(0, strings.Repeat("9332621544", 16)+strings.Repeat("0", 100)+strings.Repeat("\nline of the run", 8))).
					bash("The cache.", "ls cache/sha512", rc(0, strings.Repeat("a0209", 24)+"e\n"+strings.Repeat("d4448", 24)+"c"))
			},
			budget:   900,
			wanted:   []string{`ct = bytes.fromhex("` + strings.Repeat("9f3ac07d", 12) + `")`, "[m0005] python calc.py → 9332621544", strings.Repeat("a0209", 24) + "e d4448"},
			unwanted: []string{"hex digits)"},
		},
		{
			name: "an error line with long hex values keeps what follows them",
			build: func(b *spanBuilder) {
				want, got := strings.Repeat("3f9a0c1d", 16), strings.Repeat("b7e2d4a1", 16)
				b.bash("Fix.", "sed -i 's/a/b/' verify.py", rc(0, "")).
					bash("Check.", "python verify.py", rc(1, "Traceback (most recent call last):\n  File \"/testbed/verify.py\", line 9, in check\n"+
						"ValueError: digest mismatch: expected "+want+" got "+got))
			},
			budget: 900,
			wanted: []string{"ValueError: digest mismatch: expected 3f9a0c1d…3f9a0c1d (128 hex digits) got b7e2d4a1…b7e2d4a1 (128 hex digits)"},
		},
		{
			name: "a last check that printed what the runs before it did says what that was",
			build: func(b *spanBuilder) {
				out := "Running Sphinx v3.2.0\nWARNING: node class 'meta' is already registered\nbuild succeeded, 1 warning.\n" + strings.Repeat("reading sources... [100%] index\n", 4)
				b.bash("Fix it.", "sed -i 's/a/b/' conf.py", rc(0, "")).
					bash("Build.", "sphinx-build -b text src _build", rc(0, out)).
					bash("Again.", "sphinx-build -b text src _build", rc(0, out)).
					bash("Once more.", "sphinx-build -b text src _build", rc(0, out))
			},
			budget:   1200,
			wanted:   []string{"last check after the last change: [m0009] sphinx-build -b text src _build → the same output as [m0007]: "},
			unwanted: []string{"the same output as [m0007]: the same output as"},
		},
		{
			name: "a last check the same as the runs before it quotes their output, not their edit or exit status",
			build: func(b *spanBuilder) {
				out := "Running Sphinx v3.2.0\nWARNING: node class 'meta' is already registered\nbuild succeeded, 1 warning.\n" + strings.Repeat("reading sources... [100%] index\n", 4)
				b.bash("Fix and build.", "sed -i 's/a/b/' conf.py && sphinx-build -b text src _build", rc(0, out)).
					bash("Again.", "sphinx-build -b text src _build", rc(0, out)).
					bash("Once more.", "sphinx-build -b text src _build", rc(0, out)).
					bash("Fix it.", "sed -i 's/c/d/' run.py", rc(0, "")).
					bash("Run.", "python run.py", rc(1, out)).
					bash("Again.", "python run.py", rc(0, out)).
					bash("Once more.", "python run.py", rc(0, out))
			},
			budget:   1500,
			wanted:   []string{"last check after the last change: [m0015] python run.py → the same output as [m0013]: "},
			unwanted: []string{"the same output as [m0013]: exit 1", "the same output as [m0005]: `a` → `b`"},
		},
		{
			name: "a call repeated with another answer is not the same answer",
			build: func(b *spanBuilder) {
				args := `{"origin": "IAH", "destination": "SFO", "date": "2024-05-19"}`
				b.step("", "search_direct_flight", args, "["+flight("HAT072", "IAH", "SFO", "09:00", "13:00", 130, 282)+", "+flight("HAT180", "IAH", "SFO", "07:00", "11:00", 130, 346)+"]").
					bash("", "python check.py", rc(0, "ok")).
					step("", "search_direct_flight", args, "["+flight("HAT072", "IAH", "SFO", "09:00", "13:00", 130, 282)+", "+flight("HAT180", "IAH", "SFO", "07:00", "11:00", 999, 999)+"]")
			},
			budget:   900,
			wanted:   []string{"130/346", "999/999"},
			unwanted: []string{"same answer"},
		},
		{
			name: "three calls with one answer: the last names the two before, and a repeated empty search is not left out",
			build: func(b *spanBuilder) {
				res := "[" + flight("HAT072", "IAH", "SFO", "09:00", "13:00", 130, 282) + ", " + flight("HAT180", "IAH", "SFO", "07:00", "11:00", 130, 346) + "]"
				args := `{"origin": "IAH", "destination": "SFO", "date": "2024-05-19"}`
				b.step("", "search_direct_flight", args, res).bash("", "grep -rn 'frobnicate' src/", rc(1, "")).
					step("", "search_direct_flight", args, res).bash("", "python -m pytest", rc(0, "1 passed")).bash("", "grep -rn 'frobnicate' src/", rc(1, "")).
					step("", "search_direct_flight", args, res).bash("", "grep -rn 'twiddle' src/", rc(1, ""))
			},
			budget:   2000,
			wanted:   []string{"(same answer as m0003, m0007) → 2 records"},
			unwanted: []string{"LEFT OUT", "[m0003] search_direct", "[m0007] search_direct"},
		},
		{
			name: "net change per file: a revert cancels earlier edits",
			build: func(b *spanBuilder) {
				b.bash("Apply the change everywhere.", "sed -i 's/_default_manager/_base_manager/' django/db/models/fields/related.py", rc(0, "")).
					bash("That also changed formfield; I should revert changes to lines 987 and 1671 because the PR only covers validate.", "git checkout django/db/models/fields/related.py", rc(0, "")).
					bash("Change line 917 only.", "sed -i '917s/_default_manager/_base_manager/' django/db/models/fields/related.py", rc(0, ""))
			},
			budget: 1500,
			wanted: []string{"django/db/models/fields/related.py: line 917: `_default_manager` → `_base_manager` [m0007]; `_default_manager` → `_base_manager` [m0003] undone by git checkout [m0005]",
				"STATE:\n- changed: django/db/models/fields/related.py"},
		},
		{
			name: "an undo tells why, in the words of the message that made it, where it judged the change",
			build: func(b *spanBuilder) {
				b.bash("Apply the change everywhere.", "sed -i 's/_default_manager/_base_manager/' django/db/models/fields/related.py", rc(0, "")).
					bash("Let me check.", "git diff", rc(0, "@@ -987 +987 @@")).
					bash("This seems wrong: it also changed formfield. Let me revert.", "git checkout django/db/models/fields/related.py", rc(0, "")).
					bash("Change line 917 only.", "sed -i '917s/_default_manager/_base_manager/' django/db/models/fields/related.py", rc(0, "")).
					bash("Apply it.", "sed -i 's/x = 1/x = 2/' setup.py", rc(0, "")).
					bash("Now I will undo it.", "git checkout setup.py", rc(0, ""))
			},
			budget:   1500,
			wanted:   []string{"undone by git checkout [m0007] (\"This seems wrong: it also changed formfield.\")"},
			unwanted: []string{"(\"Now I will undo it.\")"},
		},
		{
			name: "a script's conclusion is told once, in the output's order",
			build: func(b *spanBuilder) {
				long := "Final rows: " + strings.Repeat("row(id=1, name='a', value=3.5) ", 6)
				b.bash("Run it.", "python reproduce.py", rc(0, "Setting up the database\nQuerying rows\nstep 3\nstep 4\nstep 5\n"+
					"ISSUE REPRODUCED: the queryset returned the wrong rows for the filter\n"+long+"\n"))
			},
			budget:   900,
			wanted:   []string{"… ISSUE REPRODUCED: the queryset returned the wrong rows for the filter … Final rows: row(id=1"},
			unwanted: []string{"Final rows: row(id=1, name='a', value=3.5) row(id=1, name='a', value=3.5) row(id=1, name='a', value=3.5) row(id=1,… … ISSUE"},
		},
		{
			name: "a passing test with a side command's miss is not said to show an exception",
			build: func(b *spanBuilder) {
				b.bash("Test from scratch.", "rm db.sqlite3; python manage.py test polls", rc(0,
					"rm: cannot remove 'db.sqlite3': No such file or directory\nCreating test database for alias 'default'...\n"+
						"...\n----------------------------------------------------------------------\nRan 3 tests in 0.010s\n\nOK\n"))
			},
			budget:   900,
			wanted:   []string{"ran 3 tests: OK"},
			unwanted: []string{"though its output shows"},
		},
		{
			name: "a passing test whose output shows an exception says so",
			build: func(b *spanBuilder) {
				b.bash("Run the reproduction test.", "python tests/runtests.py queries.test_reproduce_issue", rc(0,
					"Traceback (most recent call last):\n  File \"/testbed/django/db/models/sql/query.py\", line 1473, in names_to_path\n    raise FieldError(msg)\n"+
						"django.core.exceptions.FieldError: Cannot resolve keyword 'num' into field.\nexclude() crashed with: Cannot resolve keyword 'num' into field.\n\n"+
						"----------------------------------------------------------------------\nRan 1 test in 0.004s\n\nOK\n"))
			},
			budget: 900,
			wanted: []string{"OK, though its output shows django.core.exceptions.FieldError: Cannot resolve keyword 'num' into field."},
		},
		{
			name: "the same syntax error further down the file is another error",
			build: func(b *spanBuilder) {
				b.bash("Run it.", "python run.py", rc(1, syntaxTrace("135", "(self.name, self.check),"))).
					bash("Fix the repr.", "sed -i '135d' constraints.py", rc(0, "")).
					bash("Again.", "python run.py", rc(1, syntaxTrace("144", "and self.code"))).
					bash("Fix eq.", "sed -i '144d' constraints.py", rc(0, "")).
					bash("Again.", "python run.py", rc(0, "ok"))
			},
			budget: 900,
			wanted: []string{"(at /testbed/constraints.py line 135) [m0003]: resolved [m0007] (that run failed otherwise) after changing constraints.py [m0005]",
				"(at /testbed/constraints.py line 144) [m0007]: resolved [m0011] after changing constraints.py [m0009]"},
		},
		{
			name: "a syntax error pushed down by lines inserted above it is the same error",
			build: func(b *spanBuilder) {
				b.bash("Run it.", "python run.py", rc(1, syntaxTrace("135", "and self.code"))).
					bash("Log first.", "sed -i '1i import logging' constraints.py", rc(0, "")).
					bash("Again.", "python run.py", rc(1, syntaxTrace("136", "and self.code")))
			},
			budget:   900,
			wanted:   []string{"(at /testbed/constraints.py line 135) [m0003, m0007]: unresolved"},
			unwanted: []string{"resolved [m0007]"},
		},
		{
			name: "a note said again later is quoted once, as said last",
			build: func(b *spanBuilder) {
				b.bash("The issue is about datetime axis spacing when `usetex=True`.", "which latex", rc(0, "/usr/bin/latex")).
					bash("Run it.", "python reproduce_issue.py", rc(0, "Saved reproduction.png")).
					bash("The issue is about the spacing of the datetime axis when `usetex=True`.", "grep -rn DateFormatter lib/matplotlib/dates.py", rc(0, "12:class DateFormatter:"))
			},
			budget:   900,
			wanted:   []string{"[m0007] The issue is about the spacing of the datetime axis when `usetex=True`."},
			unwanted: []string{"[m0003] The issue is about datetime axis spacing"},
		},
		{
			name: "a stash pop gives the changes back: not told as a revert",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/return a - b/return a + b/' calc.py", rc(0, "")).
					bash("Check the old behaviour.", "git stash", rc(0, "Saved working directory and index state WIP on main")).
					bash("Back to my fix.", "git stash pop", rc(0, "On branch main\nChanges not staged for commit:\n\tmodified:   calc.py"))
			},
			budget:   900,
			wanted:   []string{"git stash pop → the stashed changes re-applied", "stashed, then re-applied [m0007]"},
			unwanted: []string{"restored"},
		},
		{
			name: "every line a deletion's pattern matches is undone, those a substitution added too",
			build: func(b *spanBuilder) {
				b.bash("Debug it.", `sed -i 's/def makereport(item):/def makereport(item):\n    print(f"DEBUG: phase={item}")/' src/skipping.py`, rc(0, "")).
					bash("And here.", `sed -i '12a\    print("DEBUG: xfailed")' src/skipping.py`, rc(0, "")).
					bash("Remove the debug prints.", "sed -i '/DEBUG:/d' src/skipping.py", rc(0, ""))
			},
			budget:   900,
			wanted:   []string{"inserted after line 12: `print(\"DEBUG: xfailed\")` [m0005] undone by deleting the lines matching `DEBUG:` [m0007]", "[m0003], inserted after line 12"},
			unwanted: []string{"changed: src/skipping.py"},
		},
		{
			name: "lines picked from an output keep its order, a label with the line it heads, none repeated",
			build: func(b *spanBuilder) {
				b.bash("Run it.", "python3 reproduce_issue_v2.py", rc(0, "Testing empty string:\nCaught expected ValueError: 'name' may not be empty.\n\nTesting None:\n"+
					"Caught expected ValueError: 'name' may not be empty.\n\nTesting valid name:\nBlueprint created with valid name\n")).
					say("Both empty string and `None` trigger the `ValueError`, which is good.")
			},
			budget: 900,
			wanted: []string{"→ Testing empty string: Caught expected ValueError: 'name' may not be empty. … Testing None: Caught expected ValueError: 'name' may not be empty. … " +
				"Blueprint created with valid name (8 lines)"},
		},
		{
			name: "a pass that a later syntax error shows hollow is not told as the fix",
			build: func(b *spanBuilder) {
				b.bash("Reproduce.", "python3 reproduce_issue.py", rc(1, "Running: pylint --recursive=y .\nFAIL: .a/foo.py was linted")).
					bash("Patch pylinter.", "sed -i 's/def _discover_files(self, files):/def _discover_files(self, files)/' pylint/lint/pylinter.py", rc(0, "")).
					bash("Check.", "python3 reproduce_issue.py", rc(0, "Running: pylint --recursive=y .\nPASS: .a/foo.py was ignored")).
					bash("Run pylint itself.", "pylint --recursive=y .", rc(1, "Traceback (most recent call last):\n  File \"/testbed/pylint/lint/__init__.py\", line 22, in <module>\n"+
						"    from pylint.lint.pylinter import PyLinter\n  File \"/testbed/pylint/lint/pylinter.py\", line 610\n    def _discover_files(self, files)\n                                   ^\nSyntaxError: invalid syntax"))
			},
			budget:   900,
			wanted:   []string{"seemed resolved [m0007], but pylint/lint/pylinter.py did not load then [m0009]"},
			unwanted: []string{"resolved [m0007] after changing"},
		},
		{
			name: "a pass is not called hollow by a syntax error of a program it did not run",
			build: func(b *spanBuilder) {
				b.bash("Reproduce.", "python3 test_reproduce.py", rc(1, "FAIL: x")).
					bash("Patch.", "sed -i 's/a = 1/a = 2/' helper.py", rc(0, "")).
					bash("Check.", "python3 test_reproduce.py", rc(0, "PASS: x")).
					bash("Run the other script.", "python3 reproduce.py", rc(1, "Traceback (most recent call last):\n  File \"/testbed/reproduce.py\", line 1, in <module>\n"+
						"    import helper\n  File \"/testbed/helper.py\", line 3\n    def f(\n         ^\nSyntaxError: invalid syntax"))
			},
			budget:   900,
			wanted:   []string{"[m0003]: resolved [m0007]"},
			unwanted: []string{"seemed resolved"},
		},
		{
			name: "a sentence that calls the code wrong is no retraction",
			build: func(b *spanBuilder) {
				b.bash("The root cause is in `_parse_value`, because it strips the sign before it checks for an empty string. "+
					"That's wrong for empty strings, so I will guard it.", "sed -i 's/x/y/' parse.py", rc(0, ""))
			},
			budget: 900,
			wanted: []string{"The root cause is in `_parse_value`"},
		},
		{
			name: "a no-op edit is called one",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/foo/foo/' a.py", rc(0, ""))
			},
			budget:   800,
			wanted:   []string{"no-op edit"},
			unwanted: []string{"STATE: changed: a.py", "⏎ is a line break"},
		},
		{
			name: "results, not checkmarks: a short output is kept whole",
			build: func(b *spanBuilder) {
				b.bash("Reproduce.", "python reproduce_issue.py", rc(0, "Total articles in DB: 1\nForm is invalid")).
					bash("Fix.", "sed -i '917s/a/b/' x.py", rc(0, "")).
					bash("Verify.", "python reproduce_issue.py", rc(0, "Total articles in DB: 1\nForm is valid"))
			},
			budget: 900,
			wanted: []string{"Form is invalid", "Form is valid", "last check after the last change: [m0007]"},
		},
		{
			name: "an error is resolved only with what fixed it",
			build: func(b *spanBuilder) {
				trace := "Traceback (most recent call last):\n  File \"reproduce.py\", line 5, in <module>\n    main()\nsqlite3.OperationalError: no such table: t"
				b.bash("Run.", "python reproduce.py", rc(1, trace)).
					bash("Rewrite it to create the table.", "cat <<'EOF' > reproduce.py\nimport sqlite3\nEOF", rc(0, "")).
					bash("Run again.", "python reproduce.py", rc(0, "ok"))
			},
			budget: 900,
			wanted: []string{"sqlite3.OperationalError: no such table: t", "resolved [m0007] after changing reproduce.py [m0005]"},
		},
		{
			name: "a file's head, or its lines a grep kept, is not the file read whole",
			build: func(b *spanBuilder) {
				b.bash("Look at the imports.", "head -n 50 xarray/core/variable.py", rc(0, "import copy\nimport itertools\nfrom . import utils")).
					bash("Find is_duck_array.", "cat xarray/core/utils.py | grep -A 3 \"def is_duck_array\"", rc(0, "def is_duck_array(value: Any) -> bool:\n    if isinstance(value, np.ndarray):\n        return True\n    return False")).
					bash("And the test file's start.", "tail -20 xarray/tests/test_backends.py", rc(0, "def test_end():\n    pass"))
			},
			budget:   900,
			wanted:   []string{"variable.py: read lines 1-50", "utils.py: read lines matching `def is_duck_array`", "test_backends.py: read the last 20 lines"},
			unwanted: []string{"whole", "content:"},
		},
		{
			name: "commands written in a message that made no tool call are the next step, as not run",
			build: func(b *spanBuilder) {
				b.bash("Look at the schema editor.", "grep -n collation django/db/backends/mysql/schema.py", rc(0, "12:    sql_alter_column_collate = ...")).
					say("THOUGHT: I'll create `reproduce_issue.py`.\n\n```bash\ncat <<'EOF' > reproduce_issue.py\nimport django\nprint(1)\nEOF\n```\n\nLet's run it.\n\n```bash\npython3 reproduce_issue.py\n```\n\n```bash\nsed -i '5i\\        x = 1' a.py\n```")
			},
			budget:   900,
			wanted:   []string{"NEXT: [m0005] wrote commands but made no tool call, so none ran: `cat <<'EOF' > reproduce_issue.py …(3 more lines)`, then `python3 reproduce_issue.py`, then `sed -i '5i\\        x = 1' a.py`."},
			unwanted: []string{"\"Let's run it.\""},
		},
		{
			name: "an agent's bold words are quoted without their marks, and a list of ids the next step names is not listed twice",
			build: func(b *spanBuilder) {
				b.user("My user ID is daiki_muller_1116. Cancel my trips.").
					step("", "get_user_details", `{"user_id":"daiki_muller_1116"}`, `{"user_id": "daiki_muller_1116", "reservations": ["XEHM4B", "59XX6W", "3EMQJ6", "A90KR2"]}`).
					step("", "get_reservation_details", `{"reservation_id":"59XX6W"}`, `{"reservation_id": "59XX6W", "cabin": "economy", "insurance": "yes"}`).
					say("Based on the information:\n- **Reservation 59XX6W** can be canceled because it has travel insurance.").
					user("Go on with the others.").
					step("", "get_reservation_details", `{"reservation_id":"XEHM4B"}`, `{"reservation_id": "XEHM4B", "cabin": "business", "insurance": "no"}`)
			},
			budget:   900,
			wanted:   []string{"Reservation 59XX6W can be canceled because it has travel insurance.", "NEXT: read 3EMQJ6, A90KR2"},
			unwanted: []string{"59XX6W**", "- not yet read:"},
		},
		{
			name: "a question the agent asked last comes before the records still to read",
			build: func(b *spanBuilder) {
				b.user("My user ID is daiki_muller_1116. Upgrade XEHM4B to economy, then cancel it.").
					step("", "get_user_details", `{"user_id":"daiki_muller_1116"}`, `{"user_id": "daiki_muller_1116", "reservations": ["XEHM4B", "59XX6W", "3EMQJ6", "A90KR2"]}`).
					step("", "get_reservation_details", `{"reservation_id":"XEHM4B"}`, `{"reservation_id": "XEHM4B", "cabin": "basic_economy", "insurance": "no"}`).
					step("", "get_reservation_details", `{"reservation_id":"59XX6W"}`, `{"reservation_id": "59XX6W", "cabin": "economy", "insurance": "yes"}`).
					say("Let's upgrade XEHM4B to economy and then cancel it. Please confirm if you would like to proceed.")
			},
			budget: 900,
			wanted: []string{"NEXT: the user has not yet answered [m0010]: \"Let's upgrade XEHM4B to economy and then cancel it. Please confirm if you would like to proceed.\"; not yet read: 3EMQJ6, A90KR2\n"},
		},
		{
			name: "a line that appends to a script and runs it tells what the script's last run did not print",
			build: func(b *spanBuilder) {
				b.bash("Reproduce.", "python3 reproduce_issue.py", rc(0, "BASE_DIR: /testbed\nTemplate directories: {PosixPath('/testbed')}\nISSUE REPRODUCED\nSimulating change in: /testbed/some_app/views.py")).
					bash("Check template_changed too.", "cat <<'EOF' >> reproduce_issue.py\nprint(template_changed(None, dummy_file))\nprint(template_changed(None, dummy_txt))\nEOF\npython3 reproduce_issue.py",
						rc(0, "BASE_DIR: /testbed\nTemplate directories: {PosixPath('/testbed')}\nISSUE REPRODUCED\nSimulating change in: /testbed/some_app/views.py\ntemplate_changed result for views.py: None\ntemplate_changed result for info.txt: True"))
			},
			budget: 900,
			wanted: []string{"template_changed result for views.py: None | template_changed result for info.txt: True"},
		},
		{
			name: "a line that writes a here-document and runs a command names the file and the command",
			build: func(b *spanBuilder) {
				b.bash("Fix it.", "sed -i 's/bool_option/members_option/' sphinx/ext/autodoc/__init__.py", rc(0, "")).
					bash("Rebuild with the new page.", "cat <<'EOF' > r/index.rst\n.. autoclass:: reproduce_issue.Foo\n   :members:\nEOF\ncd r && rm -rf _build && sphinx-build -b text . _build",
						rc(0, "Running Sphinx v3.2.0\nbuild succeeded, 1 warning."))
			},
			budget:   900,
			wanted:   []string{"last check after the last change: [m0005] write r/index.rst (2 lines); sphinx-build -b text . _build → Running Sphinx v3.2.0 | build succeeded"},
			unwanted: []string{"cat <<'EOF'", "written (2 lines), then ran"},
		},
		{
			name: "a traceback after a progress line, with debug prints between its frames, ends in its exception",
			build: func(b *spanBuilder) {
				out := "collected 1 item\n\nreproduce_issue.py DEBUG: logreport outcome=passed\nsTraceback (most recent call last):\n  File \"/bin/pytest\", line 8, in <module>\n" +
					"DEBUG: logreport no wasxfail outcome=passed\n    sys.exit(console_main())\n  File \"/testbed/src/_pytest/terminal.py\", line 1251, in _folded_skips\n    key = (fspath, lineno, reason)\n" +
					"TypeError: object of type 'ExceptionChainRepr' has no len()"
				b.bash("Run.", "pytest -rsx -s reproduce_issue.py", rc(1, out))
			},
			budget:   900,
			wanted:   []string{"TypeError: object of type 'ExceptionChainRepr' has no len()"},
			unwanted: []string{"exit 1: DEBUG", "sTraceback"},
		},
		{
			name: "a failure the agent explains as expected is not an open error",
			build: func(b *spanBuilder) {
				b.bash("Test the strict case.", "pytest -rsx test_dynamic_xfail_pass.py", rc(1, "test_dynamic_xfail_pass.py F\n[XPASS(strict)] xfail\n===== 1 failed in 0.04s =====")).
					bash("It failed with XPASS(strict). Is strict mode on?", "grep -n xfail_strict pyproject.toml", rc(0, "12:xfail_strict = true")).
					bash("`xfail_strict = true` is set in `pyproject.toml`. That explains why it failed with `XPASS(strict)`.", "ls", rc(0, "pyproject.toml"))
			},
			budget:   900,
			wanted:   []string{"explained by the agent [m0007]: \"`xfail_strict = true` is set in `pyproject.toml`. That explains why it failed with `XPASS(strict)`.\""},
			unwanted: []string{"unresolved", "still failing"},
		},
		{
			name: "an agent's sentence that starts with 'This …' is quoted with the sentence it refers to",
			build: func(b *spanBuilder) {
				b.bash("Look at the loader.", "grep -n dirs django/template/autoreload.py", rc(0, "14:    items.update(cwd / to_path(dir) for dir in backend.engine.dirs)")).
					say("`to_path('')` is the current directory, so `template_changed` sees the project root in DIRS. This means every change of a `.py` file is taken for a template change.")
			},
			budget: 900,
			wanted: []string{"`to_path('')` is the current directory, so `template_changed` sees the project root in DIRS. This means every change of a `.py` file is taken for a template change."},
		},
		{
			name: "a failing test's assertion is the line pytest marks, not an assert before it that passed",
			build: func(b *spanBuilder) {
				out := "=================================== FAILURES ===================================\n____ test_pkg ____\n\n    def test_pkg(pytester):\n" +
					"        assert col.name == \"x.py\"\n>       assert isinstance(col.parent, pytest.Package)\nE       AssertionError: assert False\n" +
					"FAILED test_pkg.py::test_pkg - AssertionError: assert False\n============================== 1 failed in 0.12s ==============================="
				b.bash("Run it.", "pytest test_pkg.py", rc(1, out))
			},
			budget:   900,
			wanted:   []string{"first assertion: assert isinstance(col.parent, pytest.Package)"},
			unwanted: []string{"assert col.name"},
		},
		{
			name: "a python -c script and a script run later change the files they open for writing",
			build: func(b *spanBuilder) {
				b.bash("Insert the fallback.", "python3 -c '\nimport sys\nlines = sys.stdin.readlines()\nlines[0:0] = [\"x\\n\"]\nwith open(\"src/_pytest/main.py\", \"w\") as f:\n    f.writelines(lines)\n' < src/_pytest/main.py", rc(0, "")).
					bash("Write the fix as a script.", "cat <<'EOF' > apply_fix.py\nfile_path = 'requests/models.py'\nwith open(file_path, 'r') as f:\n    lines = f.readlines()\nwith open(file_path, 'w') as f:\n    f.writelines(lines[1:])\nEOF", rc(0, "")).
					bash("Run it.", "python3 apply_fix.py", rc(0, ""))
			},
			budget: 900,
			wanted: []string{"src/_pytest/main.py: rewritten by a Python script [m0003]", "changed: src/_pytest/main.py, requests/models.py"},
		},
		{
			name: "a debug line inserted and then deleted by its pattern leaves no change",
			build: func(b *spanBuilder) {
				b.bash("Add a debug print.", `sed -i '521i\        print(f"DEBUG: pkginit={pkginit}")' src/_pytest/main.py`, rc(0, "")).
					bash("Fix.", "sed -i 's/col = new_col/col = [new_col]/' src/_pytest/main.py", rc(0, "")).
					bash("Remove the debug print.", "sed -i '/DEBUG: pkginit=/d' src/_pytest/main.py", rc(0, ""))
			},
			budget:   900,
			wanted:   []string{"`col = new_col` → `col = [new_col]` [m0005]", "undone by deleting the lines matching `DEBUG: pkginit=` [m0007]"},
			unwanted: []string{"deleted each line matching"},
		},
		{
			name: "an error got past by writing a new script says it was created, not changed",
			build: func(b *spanBuilder) {
				b.bash("Run the tests.", "pytest testing/test_collection.py", rc(4, "E   ModuleNotFoundError: No module named 'xmlschema'")).
					bash("Isolate the run.", "cat <<'EOF' > isolated.ini\n[pytest]\naddopts = -p no:junitxml\nEOF", rc(0, "")).
					bash("Run it.", "pytest -c isolated.ini testing/test_collection.py", rc(0, "============ 1 passed in 0.10s ============"))
			},
			budget:   900,
			wanted:   []string{"after creating isolated.ini [m0005]"},
			unwanted: []string{"after changing isolated.ini"},
		},
		{
			name: "file's output counts its lines, not its words",
			build: func(b *spanBuilder) {
				b.bash("What are these?", "file ./*", rc(0, "./a.mpeg: ASCII text, with very long lines (1544), with no line terminators\n./b.m4v: ASCII text, with very long lines (2048), with no line terminators\n./c.avi: ASCII text, with very long lines (4096), with no line terminators")).
					bash("Look at one.", "head -c 100 ./a.mpeg", rc(0, "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="))
			},
			budget:   900,
			unwanted: []string{"entries)"},
			wanted:   []string{"./a.mpeg: ASCII text, with very long lines (1544)"},
		},
		{
			name: "earlier refusals of an edit of the same file are not other errors still open",
			build: func(b *spanBuilder) {
				b.step("Add the toggle.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/App.tsx", "old_str": "a", "new_str": "b"}`,
					"[Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.]\n/w/src/App.tsx:22").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/App.tsx", "old_str": "a", "new_str": "c"}`,
						"[Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.]\n/w/src/App.tsx:15")
			},
			budget:   900,
			wanted:   []string{"- the last edit of /w/src/App.tsx was not made: edit rejected: new syntax error(s) /w/src/App.tsx:15 [m0005]\n"},
			unwanted: []string{"other error still open"},
		},
		{
			name: "a part of a file read says which part at the least detail too",
			build: func(b *spanBuilder) {
				for i := range 12 {
					b.bash("Read.", fmt.Sprintf("nl -ba pkg/mod%02d.py | sed -n '130,180p'", i), rc(0, strings.Repeat("   130\t    x = compute_value(argument)\n", 40)))
				}
			},
			budget:   250,
			wanted:   []string{".py: read lines 130-180 [m00"},
			unwanted: []string{".py: read [m00"},
		},
		{
			name: "commands a message gave up before its last block are not the next step",
			build: func(b *spanBuilder) {
				b.bash("Look.", "grep -n is_valid django/contrib/admin/options.py", rc(0, "2012:            if formset.is_valid():")).
					say("THOUGHT: I will print the errors.\n\n```bash\nsed -i '2012a\\            else:' django/contrib/admin/options.py\n```\n\nWait, `sed` is tricky with newlines. I'll use a simpler approach.\n\n```bash\nnl -ba django/contrib/admin/options.py | sed -n '2010,2015p'\n```")
			},
			budget:   900,
			wanted:   []string{"so none ran: `nl -ba django/contrib/admin/options.py | sed -n '2010,2015p'`."},
			unwanted: []string{"`sed -i '2012a"},
		},
		{
			name: "a refused edit of a file an earlier edit changed does not call the file unchanged",
			build: func(b *spanBuilder) {
				b.bash("Insert the check.", "sed -i '317a\\    if(x) y();' src/match.c", rc(0, "")).
					step("Move it.", "str_replace_editor", `{"command": "str_replace", "path": "src/match.c", "old_str": "case B:\n\treturn t;", "new_str": "x"}`,
						"ERROR:\nNo replacement was performed, old_str `case B:\n\treturn t;` did not appear verbatim in src/match.c.")
			},
			budget:   900,
			wanted:   []string{"so the file has only the changes FILES lists."},
			unwanted: []string{"left the file unchanged"},
		},
		{
			name: "steps an item shown does not name are in the left-out line",
			build: func(b *spanBuilder) {
				for _, r := range []string{"1,40", "41,80", "81,120"} {
					b.bash("Read.", "nl -ba pkg/core.py | sed -n '"+r+"p'", rc(0, strings.Repeat("    10\t    value = compute(argument)\n", 40)))
				}
				for i := range 10 {
					b.bash("Read.", fmt.Sprintf("nl -ba pkg/mod%02d.py | sed -n '130,180p'", i), rc(0, strings.Repeat("   130\t    x = compute_value(argument)\n", 40)))
				}
			},
			budget: 300,
			wanted: []string{"pkg/core.py: read lines 81-120 [m0007]", "LEFT OUT FOR SIZE: ", "m0003–m0006"},
		},
		{
			name: "a chained traceback's error is its last exception, whatever its name, told with the one it was raised while handling",
			build: func(b *spanBuilder) {
				trace := "Traceback (most recent call last):\n  File \"/testbed/django/apps/config.py\", line 107, in create\n    entry = module.default_app_config\n" +
					"AttributeError: module 'reproduce_app' has no attribute 'default_app_config'\n\nDuring handling of the above exception, another exception occurred:\n\n" +
					"Traceback (most recent call last):\n  File \"reproduce_issue.py\", line 36, in <module>\n    django.setup()\n  File \"/testbed/django/apps/config.py\", line 78, in _path_from_module\n    \"with a 'path' class attribute.\" % (module,))\n" +
					"django.core.exceptions.ImproperlyConfigured: The app module <module 'reproduce_app'> has no filesystem location"
				b.bash("Run.", "python3 reproduce_issue.py", rc(1, trace))
			},
			budget: 900,
			wanted: []string{"- django.core.exceptions.ImproperlyConfigured: The app module <module 'reproduce_app'> has no filesystem location " +
				"(raised while handling AttributeError: module 'reproduce_app' has no attribute 'default_app_config' at /testbed/django/apps/config.py line 107 in create)"},
		},
		{
			name: "an error is resolved when the file it was raised in changed and the same run fails otherwise, not behind a syntax error",
			build: func(b *spanBuilder) {
				trace := func(file, line, exc string) string {
					return rc(1, "Traceback (most recent call last):\n  File \"/testbed/test_requests.py\", line 3, in <module>\n    import requests\n  File \"/testbed/requests/"+file+"\", line "+line+", in <module>\n    x = 1\n"+exc)
				}
				b.bash("Run the tests.", "python3 test_requests.py", trace("cookies.py", "136", "AttributeError: module 'collections' has no attribute 'MutableMapping'")).
					bash("Fix cookies.py.", "sed -i 's/collections.MutableMapping/MutableMapping/' requests/cookies.py", rc(0, "")).
					bash("Again.", "python3 test_requests.py", trace("models.py", "9", "AttributeError: module 'collections' has no attribute 'Callable'")).
					bash("Fix models.py.", "sed -i 's/collections.Callable/Callable/' requests/models.py", rc(0, "")).
					bash("Again.", "python3 test_requests.py", trace("models.py", "12", "SyntaxError: invalid syntax"))
			},
			budget: 1500,
			wanted: []string{"'MutableMapping' (at /testbed/requests/cookies.py line 136 in <module>) [m0003]: resolved [m0007] (that run failed otherwise) after changing requests/cookies.py [m0005]",
				"'Callable' (at /testbed/requests/models.py line 9 in <module>) [m0007]: unresolved"}, // the syntax error stops the run before it
			unwanted: []string{"s/collections.Callable/Callable"},
		},
		{
			name: "a failing test is resolved when the same run fails on other tests only",
			build: func(b *spanBuilder) {
				b.bash("Run the tests.", "python -m pytest tests/test_collection.py", rc(1, "FAILED tests/test_collection.py::test_pkgfile - AssertionError: assert False\n===== 1 failed, 70 passed in 2.1s =====")).
					bash("Fix it.", "sed -i 's/col = new_col/col = [new_col]/' src/main.py", rc(0, "")).
					bash("Again.", "python -m pytest tests/test_collection.py", rc(1, "FAILED tests/test_collection.py::test_symlinks - Failed: nomatch\n===== 1 failed, 70 passed in 2.0s ====="))
			},
			budget: 1500,
			wanted: []string{"[m0003]: resolved [m0007] (that run failed otherwise) after changing src/main.py [m0005]", "[m0007]: unresolved"},
		},
		{
			name: "a side command's error from two lines is one error",
			build: func(b *spanBuilder) {
				b.bash("Build and read the log.", "sphinx-build -b html . _build/html; cat /tmp/debug.log", rc(1, "build succeeded.\ncat: /tmp/debug.log: No such file or directory")).
					bash("Run the script instead.", "python3 reproduce.py; cat /tmp/debug.log", rc(1, "done\ncat: /tmp/debug.log: No such file or directory"))
			},
			budget: 1200,
			wanted: []string{"cat: /tmp/debug.log: No such file or directory [m0003, m0005]"},
		},
		{
			name: "an error nothing fixed stays unresolved",
			build: func(b *spanBuilder) {
				b.bash("Run the tests.", "python -m pytest tests", rc(1, "FAILED tests/test_a.py::test_x - assert 1 == 2\n===== 1 failed in 0.1s ====="))
			},
			budget: 700,
			wanted: []string{"tests/test_a.py::test_x", "unresolved", "still failing"},
		},
		{
			name: "harness reminders and tool errors in the user role are not the user's words",
			build: func(b *spanBuilder) {
				b.say("Two actions at once.").
					user("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.\n\nPlease format your action in triple backticks as shown.").
					user("Parameter 'command' is expected to be one of ['view', 'create'].").
					user("Please keep the public API unchanged.")
			},
			budget: 800,
			wanted: []string{"\nHARNESS (not the user):\n[m0004] Please always provide EXACTLY ONE action",
				"a tool error in the user role, not a user request: Parameter 'command'",
				"[m0006] Please keep the public API unchanged."},
			unwanted: []string{"to the user: Two actions"},
		},
		{
			name: "unread ids of a list being gone through are the next step",
			build: func(b *spanBuilder) {
				b.user("My user ID is amelia_davis_8890; cancel all my upcoming flights.").
					step("", "get_user_details", `{"user_id":"amelia_davis_8890"}`, `{"name": {"first_name": "Amelia", "last_name": "Davis"}, "membership": "silver", "reservations": ["8C8K4E", "UDMOP1", "I6M8JQ", "4XGCCM"]}`).
					step("", "get_reservation_details", `{"reservation_id":"8C8K4E"}`, `{"reservation_id": "8C8K4E", "cabin": "business", "insurance": "yes", "created_at": "2024-05-08T10:31:36"}`).
					step("", "get_reservation_details", `{"reservation_id":"UDMOP1"}`, `{"reservation_id": "UDMOP1", "cabin": "basic_economy", "insurance": "no", "created_at": "2024-05-09T11:34:16"}`)
			},
			budget: 900,
			// Rows of one shape are a table; the year the dates share is said
			// once, in its header.
			wanted: []string{"NEXT: read I6M8JQ, 4XGCCM", "(below, dates in 2024)", "8C8K4E [m0006]: business; insurance yes; created_at 05-08T10:31",
				"UDMOP1 [m0008]: basic_economy; insurance no; created_at 05-09T11:34", "STATE:\n- no call has changed anything yet"},
		},
		{
			name: "the profile the user named outranks the newer records of a search",
			build: func(b *spanBuilder) {
				b.user("My user ID is aarav_ahmed_6699. I want a flight from JFK to SFO on May 24th; I'll pay with my card ending in 7334. "+strings.Repeat("I really need this settled today. ", 12)).
					step("", "get_user_details", `{"user_id":"aarav_ahmed_6699"}`, `{"payment_methods": {"credit_card_9074831": {"source": "credit_card", "brand": "mastercard", "last_four": "7334", "id": "credit_card_9074831"}}, "membership": "silver", "dob": "1981-05-26"}`)
				for i := range 9 {
					b.step("", "search_direct_flight", fmt.Sprintf(`{"origin":"JFK","destination":"SFO","date":"2024-05-1%d"}`, i+1),
						fmt.Sprintf(`[{"flight_number": "HAT%03d", "origin": "JFK", "destination": "SFO", "status": "available", "available_seats": {"basic_economy": %d, "economy": 1%d, "business": 2%d}, "prices": {"basic_economy": %d3, "economy": 1%d3, "business": 2%d5}, "scheduled_departure_time_est": "1%d:00:00", "scheduled_arrival_time_est": "2%d:00:00"}]`, 100+i, i, i, i, 5+i%4, i, i, i, i%4))
				}
			},
			budget:   600,
			wanted:   []string{"aarav_ahmed_6699 [m0004]:", "credit_card_9074831 (mastercard 7334)"},
			unwanted: []string{"HAT100 [m0006]"}, // the oldest search gives way
		},
		{
			name: "an intention carried out is not the next step",
			build: func(b *spanBuilder) {
				b.bash("Now I will run the reproduction script again to verify the fix.", "python reproduce_issue.py", rc(0, "Form is valid"))
			},
			budget:   700,
			unwanted: []string{"not yet done: \"Now I will run the reproduction script"},
		},
		{
			name: "an intention with no call is the next step",
			build: func(b *spanBuilder) {
				b.bash("I created printenv.pl. After that, I will use `curl` to upload printenv.pl to /cgi-bin/file.pl.", "create printenv.pl", "[File: /x/printenv.pl (1 lines total)]\n1:")
			},
			budget: 700,
			wanted: []string{"NEXT: stated at [m0003], not yet done", "upload printenv.pl"},
		},
		{
			name: "negative searches collapse into one line",
			build: func(b *spanBuilder) {
				b.bash("", `find src -name "*command*.pony"`, "").
					bash("", `grep -r "CommandParser" src`, rc(1, "")).
					bash("", `find src -path "*cli*pony"`, "")
			},
			budget: 700,
			wanted: []string{"3 searches, no match"},
		},
		{
			name: "a path a tool says is missing is marked so",
			build: func(b *spanBuilder) {
				b.step("", "execute_bash", `{"command":"ls src/lib"}`, "ls: cannot access 'src/lib': No such file or directory")
			},
			budget:   700,
			wanted:   []string{"src/lib: does not exist"},
			unwanted: []string{"ERRORS:"},
		},
		{
			name: "a small file written in the span is carried whole",
			build: func(b *spanBuilder) {
				b.bash("Write the script.", "cat <<'EOF' > printenv.pl\n#!/usr/bin/perl\nprint \"Content-type: text/html\\n\\n\";\nEOF", rc(0, "")).
					bash("Run it.", "perl printenv.pl", rc(0, "Content-type: text/html"))
			},
			budget: 900,
			wanted: []string{"printenv.pl: created [m0003]", "#!/usr/bin/perl", "still present"},
		},
		{
			name: "an error fixed by other arguments says which",
			build: func(b *spanBuilder) {
				b.step("", "str_replace_editor", `{"command": "view", "path": "/w/cli.pony", "view_range": [100, 150]}`,
					"ERROR:\nInvalid `view_range` parameter: [100, 150]. Its second element `150` should be smaller than the number of lines in the file: `122`.").
					step("", "str_replace_editor", `{"command": "view", "path": "/w/cli.pony", "view_range": [100, -1]}`,
						"Here's the result of running `cat -n` on /w/cli.pony:\n   100\t      end\n   101\t")
			},
			budget: 700,
			wanted: []string{"- Invalid `view_range` parameter: [100, 150].", "resolved [m0005] with view_range [100, -1] (was [100, 150])"},
			// The error's line tells the failed view: no step line repeats it.
			unwanted: []string{"[m0003] view"},
		},
		{
			name: "a file view says what its lines hold",
			build: func(b *spanBuilder) {
				prose := strings.Repeat("     6\tMore prose about the package, long enough to make this view more than a small file.\n", 8)
				doc := "Here's the result of running `cat -n` on /w/cli.pony:\n     1\t\"\"\"\n     2\t# CLI Package\n     3\t\n     4\tThe CLI package parses command lines.\n     5\tclass Example is not code here\n" + prose + "     7\t\"\"\"\n"
				code := "Here's the result of running `cat -n` on /w/parser.py:\n     1\timport os\n     2\t\n     3\tclass CommandParser:\n     4\t    def parse(self, args):\n     5\t        return args\n" +
					strings.Repeat("     6\t# a comment line that makes this view larger than a small file\n", 8)
				b.step("", "str_replace_editor", `{"command": "view", "path": "/w/cli.pony"}`, doc).
					step("", "str_replace_editor", `{"command": "view", "path": "/w/parser.py"}`, code)
			},
			budget: 700,
			wanted: []string{"/w/cli.pony: read", "comments or docstrings only, no code",
				"/w/parser.py: read", "defines class CommandParser (l.3), def parse (l.4)"},
			unwanted: []string{"class Example"},
		},
		{
			name: "a small file stays whole at the least detail",
			build: func(b *spanBuilder) {
				b.bash("", "create printenv.pl", "[File: /x/printenv.pl (1 lines total)]\n1:").
					bash("", "edit 1:1\n#!/usr/bin/perl\nprint \"hi\";\nend_of_edit", "[File: /x/printenv.pl (2 lines total)]\n1:#!/usr/bin/perl\n2:print \"hi\";\nFile updated.")
				for i := range 12 {
					b.bash("Probe.", fmt.Sprintf("curl http://h/%d", i), rc(0, fmt.Sprintf("page %d says something long enough to matter here", i)))
				}
			},
			budget: 600,
			wanted: []string{"printenv.pl", "content:\n    #!/usr/bin/perl\n    print \"hi\";"},
		},
		{
			name: "a table says a shared year once and keeps each flight's day",
			build: func(b *spanBuilder) {
				b.step("", "get_reservation_details", `{"reservation_id":"4XGCCM"}`,
					`{"reservation_id": "4XGCCM", "origin": "IAH", "destination": "DTW", "flights": [{"flight_number": "HAT116", "date": "2024-05-03"}, {"flight_number": "HAT020", "date": "2024-05-03"}, {"flight_number": "HAT169", "date": "2024-05-04"}], "passengers": [{"first_name": "A", "last_name": "B"}, {"first_name": "C", "last_name": "D"}], "created_at": "2024-05-02T14:48:47"}`).
					step("", "get_reservation_details", `{"reservation_id":"XAZ3C0"}`,
						`{"reservation_id": "XAZ3C0", "origin": "ATL", "destination": "CLT", "flights": [{"flight_number": "HAT110", "date": "2024-05-27"}], "passengers": [{"first_name": "E", "last_name": "F"}], "created_at": "2024-05-06T15:43:54"}`)
			},
			budget: 900,
			wanted: []string{"(below, dates in 2024)", "4XGCCM [m0003]: IAH-DTW; HAT116, HAT020 05-03, HAT169 05-04; A B, C D; created_at 05-02T14:48",
				"XAZ3C0 [m0005]: ATL-CLT; HAT110 05-27"},
			unwanted: []string{"2024-05-02T14:48:47", "(columns)"},
		},
		{
			name: "a page's form says its method and encoding",
			build: func(b *spanBuilder) {
				page := "<html><head><title>Perl File Upload</title></head><body><form method=\"post\" enctype=\"multipart/form-data\"><input type=\"file\" name=\"file\"><input type=\"submit\" name=\"Submit!\"></form></body></html>"
				b.bash("", "curl http://web.example:8000/cgi-bin/file.pl", rc(0, page))
			},
			budget: 700,
			wanted: []string{"title \"Perl File Upload\"; form (POST multipart/form-data) fields file, Submit!"},
		},
		{
			name: "markup in a short output is read as text",
			build: func(b *spanBuilder) {
				b.bash("", "python reproduce_issue.py", rc(0, "Form is invalid\n<ul class=\"errorlist\"><li>article<ul class=\"errorlist\"><li>article instance with id 1 does not exist.</li></ul></li></ul>"))
			},
			budget: 700,
			wanted: []string{"Form is invalid | article article instance with id 1 does not exist."},
		},
		{
			name: "an install that fixed a missing program is named",
			build: func(b *spanBuilder) {
				b.bash("", "python repro.py", rc(1, "RuntimeError: Failed to process string with tex because dvipng could not be found")).
					bash("", "apt-get update && apt-get install -y dvipng", rc(0, "Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease\nReading package lists...\nSetting up dvipng (1.15-1.1) ...")).
					bash("", "python repro.py", rc(0, "Saved reproduction.png"))
			},
			budget:   800,
			wanted:   []string{"resolved [m0007] after apt-get update && apt-get install -y dvipng [m0005]"},
			unwanted: []string{"on a retry", "→ Hit:1"},
		},
		{
			name: "a larger file written in the span says what it defines",
			build: func(b *spanBuilder) {
				script := "import django\n" + strings.Repeat("# setup\n", 12) + "class ArticleManager(models.Manager):\n    pass\n\nclass Article(models.Model):\n    pass\n\ndef main():\n    pass\n"
				b.bash("Write the reproduction.", "cat <<'EOF' > reproduce_issue.py\n"+script+"EOF", rc(0, "")).
					bash("Run it.", "python reproduce_issue.py", rc(0, "Form is invalid"))
			},
			budget: 800,
			wanted: []string{"reproduce_issue.py: created [m0003]", "defines class ArticleManager, class Article, def main"},
		},
		{
			name: "a conclusion keeps the reason it draws on",
			build: func(b *spanBuilder) {
				b.bash("If I change `formfield` to use `_base_manager`, all objects are shown. This seems wrong based on \"default should avoid archived articles\".\n\nSo I should revert changes to lines 987 and 1671.",
					"git checkout django/db/models/fields/related.py", rc(0, ""))
			},
			budget: 800,
			wanted: []string{`This seems wrong based on "default should avoid archived articles". So I should revert changes to lines 987 and 1671.`},
		},
		{
			name: "a few hits in one file keep their text",
			build: func(b *spanBuilder) {
				b.bash("Where is it read?", `grep -n "_loop_size" sympy/tensor/array/ndim_array.py`,
					rc(0, "69:        if index >= self._loop_size:\n178:        return self._loop_size\n289:            return self._loop_size\n319:        for i in range(self._loop_size):"))
			},
			budget: 900,
			wanted: []string{"4 hits: 69: if index >= self._loop_size: | 178: return self._loop_size"},
		},
		{
			name: "files written after a cd are named with their directory",
			build: func(b *spanBuilder) {
				b.bash("Set up a reproduction.", "mkdir -p repro && cd repro && cat <<'EOF' > conf.py\nproject = 'x'\nEOF\nrm -rf _build && sphinx-build . _build/html", rc(0, "build succeeded"))
			},
			budget:   900,
			wanted:   []string{"conf.py (in repro/)"},
			unwanted: []string{"_build deleted", "_build: deleted"},
		},
		{
			name: "lines printed through a pipe are the lines read",
			build: func(b *spanBuilder) {
				b.bash("", "nl -ba django/core/serializers/base.py | sed -n '320,360p'", rc(0, "   320\tdef build_instance(Model, data, db):\n   321\t    pass"))
			},
			budget:   700,
			wanted:   []string{"base.py: read lines 320-360"},
			unwanted: []string{"read whole"},
		},
		{
			name: "a command that could not start is resolved by the next run that works",
			build: func(b *spanBuilder) {
				b.bash("", "/usr/bin/python3 -m pytest tests/test_a.py", rc(1, "/usr/bin/python3: No module named pytest")).
					bash("", "pip install pytest", rc(0, "Requirement already satisfied: pytest in /opt/env (8.3.3)\nWARNING: Running pip as the 'root' user can result in broken permissions")).
					bash("", "pytest tests/test_b.py", rc(4, "ERROR: file or directory not found: tests/test_b.py")).
					bash("", "pytest tests/test_c.py", rc(0, "===== 45 passed in 1.2s ====="))
			},
			budget: 900,
			wanted: []string{"No module named pytest [m0003]: resolved [m0007] (that run failed otherwise) with another command: pytest tests/test_b.py",
				"tests/test_b.py [m0007]: resolved [m0009]",
				"pip install pytest → Requirement already satisfied"},
			unwanted: []string{"still failing", "after pip install", "resolved [m0009] (that run failed otherwise)"},
		},
		{
			name: "a test file run that reports no tests does not resolve a test run that could not start",
			build: func(b *spanBuilder) {
				b.bash("", "python3 -m pytest sympy/core/tests/test_basic.py", rc(1, "/usr/bin/python3: No module named pytest")).
					bash("", "python3 sympy/core/tests/test_basic.py", rc(0, "/testbed/sympy/core/basic.py:3: DeprecationWarning: Using or importing the ABCs from 'collections' is deprecated")).
					bash("It ran but didn't output anything.", "bin/test sympy/core/tests/test_basic.py", rc(0, "============= tests finished: 16 passed, in 0.20 seconds ============="))
			},
			budget:   900,
			wanted:   []string{"No module named pytest [m0003]: resolved [m0007] with another command: bin/test sympy/core/tests/test_basic.py"},
			unwanted: []string{"resolved [m0005]"},
		},
		{
			name: "a fix the agent says misfired leaves the error open",
			build: func(b *spanBuilder) {
				b.step("", "str_replace_editor", `{"command": "str_replace", "path": "/w/match.c", "old_str": "case X:", "new_str": "case X: y();"}`,
					"ERROR:\nNo replacement was performed, old_str `case X:` did not appear verbatim in /w/match.c.").
					step("", "str_replace_editor", `{"command": "insert", "path": "/w/match.c", "insert_line": 317, "new_str": "y();"}`,
						"The file /w/match.c has been edited.").
					say("The inserted line is not correctly placed: it is unreachable after the return.")
			},
			budget: 800,
			wanted: []string{"did not appear verbatim in /w/match.c. [m0003]", "[m0003]: unresolved"},
		},
		{
			name: "a script that rewrites a file changes it when it runs",
			build: func(b *spanBuilder) {
				script := "with open('sympy/printing/str.py', 'r') as f:\n    lines = f.readlines()\nwith open('sympy/printing/str.py', 'w') as f:\n    f.writelines(lines)\n"
				b.bash("", "cat <<'EOF' > update_str.py\n"+script+"EOF", rc(0, "")).
					bash("", "python update_str.py", rc(0, "")).
					bash("Next, I need to modify `_print_MatAdd` to handle signs.", "grep -n \"def _print_Mul\" sympy/printing/pretty/pretty.py", rc(0, "42:    def _print_Mul(self, expr):"))
			},
			budget: 900,
			wanted: []string{"changed: sympy/printing/str.py", "sympy/printing/str.py: rewritten by running update_str.py [m0005]",
				"its message's call: grep -n \"def _print_Mul\" sympy/printing/pretty/pretty.py"},
		},
		{
			name: "a script's rewrite tells what the script writes",
			build: func(b *spanBuilder) {
				script := "with open('sphinx/ext/autodoc/__init__.py') as f:\n    lines = f.readlines()\nout = []\nfor i, line in enumerate(lines):\n" +
					"    if 'if want_all and isprivate:' in line:\n        out.append(line)\n" +
					"        out.append('                    if self.options.private_members is None:\\n')\n" +
					"        out.append('                        keep = False\\n')\n        continue\n    out.append(line)\n" +
					"with open('sphinx/ext/autodoc/__init__.py', 'w') as f:\n    f.writelines(out)\n"
				b.bash("", "cat <<'EOF' > update_autodoc.py\n"+script+"EOF", rc(0, "")).
					bash("", "python3 update_autodoc.py", rc(0, ""))
			},
			budget: 900,
			wanted: []string{"sphinx/ext/autodoc/__init__.py: rewritten by running update_autodoc.py (writes `if self.options.private_members is None: ⏎ keep = False`; 2 lines) [m0005]"},
		},
		{
			name: "what the agent takes back in its message is not quoted as a finding",
			build: func(b *spanBuilder) {
				b.bash("The first condition matched the second block. Because `elif want_all and isprivate:` does NOT contain `if want_all and isprivate:`. "+
					"Ah, I see what happened. `if` is a substring of `elif`, because the match is a substring test. I should use `line.strip().startswith('if ')` instead.",
					"git checkout sphinx/ext/autodoc/__init__.py", rc(0, ""))
			},
			budget:   900,
			wanted:   []string{"[m0003] `if` is a substring of `elif`, because the match is a substring test."},
			unwanted: []string{"does NOT contain"},
		},
		{
			name: "an exception a reproduction test raises itself is not an open fault",
			build: func(b *spanBuilder) {
				out := "collected 1 item\n\nreproduce_issue.py F\n\n=== FAILURES ===\n___ test_chained ___\n\n    def test_chained():\n        try:\n" +
					">           raise ValueError(11)\nE           ValueError: 11\n\nreproduce_issue.py:6: ValueError\n" +
					"=== short test summary info ===\nFAILED reproduce_issue.py::test_chained - ValueError: 11\n=== 1 failed in 0.05s ==="
				b.bash("Run the reproduction.", "pytest reproduce_issue.py", rc(1, out))
			},
			budget:   900,
			wanted:   []string{"E ValueError: 11 [m0003]: raised on purpose by the test's own `raise ValueError(11)`"},
			unwanted: []string{"still failing"},
		},
		{
			name: "an exception the code under test raises is an open fault, though pytest marks its raise",
			build: func(b *spanBuilder) {
				out := "collected 1 item\n\ntests/test_parse.py F\n\n=== FAILURES ===\n___ test_parse ___\n\n    def test_parse():\n>       parse('')\n\n" +
					"tests/test_parse.py:4: \n\n    def parse(s):\n        if not s:\n>           raise ValueError('empty')\nE           ValueError: empty\n\nsrc/pkg/parser.py:12: ValueError\n" +
					"=== short test summary info ===\nFAILED tests/test_parse.py::test_parse - ValueError: empty\n=== 1 failed in 0.05s ==="
				b.bash("Run the tests.", "pytest tests/test_parse.py", rc(1, out))
			},
			budget:   900,
			wanted:   []string{"E ValueError: empty [m0003]: unresolved"},
			unwanted: []string{"on purpose"},
		},
		{
			name: "a small file read whole keeps its content",
			build: func(b *spanBuilder) {
				b.bash("", "cat eps1.7_wh1ter0se.m4v", rc(0, "EOY XF, AY VMU M UKFNY TOY YF UFWHYKAXZ EAZZHN.")).
					bash("", "cat ./key.txt", rc(0, "flat{not_the_flag}"))
				for i := range 14 {
					b.bash("Probe.", fmt.Sprintf("curl http://h/%d", i), rc(0, fmt.Sprintf("page %d says something long enough to matter here", i)))
				}
			},
			budget: 700,
			wanted: []string{"eps1.7_wh1ter0se.m4v: read", "content:\n    EOY XF, AY VMU M UKFNY TOY YF UFWHYKAXZ EAZZHN."},
		},
		{
			name: "a line's error is resolved by a later success of its last command",
			build: func(b *spanBuilder) {
				b.bash("", "sed -i '301i print(x)' sphinx/util/docfields.py && sphinx-build -b html repro repro/_build/html",
					rc(2, "Traceback (most recent call last):\n  File \"sphinx/util/docfields.py\", line 301\nIndentationError: expected an indented block")).
					bash("", "git checkout sphinx/util/docfields.py", rc(0, "")).
					bash("", "sphinx-build -b html repro repro/_build/html", rc(0, "build succeeded."))
			},
			budget:   800,
			wanted:   []string{"IndentationError: expected an indented block", "resolved [m0007]"},
			unwanted: []string{"unresolved"},
		},
		{
			name: "a file a script writes and removes is not changed by it",
			build: func(b *spanBuilder) {
				script := "import os\nwith open('books.json', 'w') as f:\n    f.write('[]')\nos.remove('books.json')\n"
				b.bash("", "cat <<'EOF' > repro.py\n"+script+"EOF", rc(0, "")).
					bash("", "python repro.py", rc(0, "done"))
			},
			budget:   800,
			unwanted: []string{"books.json: rewritten", "changed: books.json"},
		},
		{
			name: "a reaction about the task is not a misfired fix",
			build: func(b *spanBuilder) {
				b.bash("", "python repro.py", rc(1, "RuntimeError: dvipng could not be found")).
					bash("", "apt-get install -y dvipng", rc(0, "Setting up dvipng (1.15-1.1) ...")).
					bash("", "python repro.py", rc(0, "Saved reproduction.png")).
					say("Great, the script runs now. The PR says the offset text of the axis is misplaced.")
			},
			budget: 800,
			wanted: []string{"resolved [m0007] after apt-get install -y dvipng [m0005]"},
		},
		{
			name: "a reverse substitution undoes the first",
			build: func(b *spanBuilder) {
				b.bash("", `sed -i 's/qop=auth/qop="auth"/' requests/auth.py`, rc(0, "")).
					bash("", `sed -i 's/qop="auth"/qop=auth/' requests/auth.py`, rc(0, ""))
			},
			budget:   800,
			wanted:   []string{"requests/auth.py: `qop=auth` → `qop=\"auth\"` [m0003] undone by [m0005]"},
			unwanted: []string{"changed: requests/auth.py"},
		},
		{
			name: "a build after a change checks it",
			build: func(b *spanBuilder) {
				b.bash("", `sed -i 's/a/b/' sphinx/ext/autodoc/directive.py`, rc(0, "")).
					bash("", "rm -f /tmp/d.log; sphinx-build -a repro repro/_build; cat /tmp/d.log", rc(1, "build succeeded.\ncat: /tmp/d.log: No such file or directory")).
					bash("", `find . -name __pycache__ -exec rm -rf {} +`, rc(0, ""))
			},
			budget:   800,
			wanted:   []string{"last check after the last change: [m0005]"},
			unwanted: []string{"not run, tested or sent", "no match"},
		},
		{
			name: "a repeated run tells what it printed that the run before did not",
			build: func(b *spanBuilder) {
				banner := "WARNING: node class 'meta' is already registered\nstep 1\nstep 2\nstep 3\nstep 4\n"
				b.bash("Run it.", "python repro.py", rc(0, banner+"RESULT: 3 members documented")).
					bash("Patch.", "sed -i 's/a/b/' lib.py", rc(0, "")).
					bash("Again.", "python repro.py", rc(0, banner+"RESULT: 4 members documented")).
					bash("Patch more.", "sed -i 's/c/d/' lib.py", rc(0, "")).
					bash("Again.", "python repro.py", rc(0, banner+"RESULT: 4 members documented"))
			},
			budget: 900,
			wanted: []string{"[m0007, m0011] python repro.py (×2) → … RESULT: 4 members documented (6 lines)",
				"last check after the last change: [m0011] python repro.py → the same output as [m0007]: … RESULT: 4 members documented"},
		},
		{
			name: "several greps in one line: each pattern named, no hit credited to the first",
			build: func(b *spanBuilder) {
				b.bash("Find both.", `grep -n "class DataDocumenter" sphinx/ext/autodoc/__init__.py; grep -n "class AttributeDocumenter" sphinx/ext/autodoc/__init__.py`,
					rc(0, "1767:class DataDocumenter(ModuleLevelDocumenter):\n1909:class DataDocumenterMixin:\n2430:class AttributeDocumenter(ClassLevelDocumenter):"))
			},
			budget:   700,
			wanted:   []string{`grep "class DataDocumenter", "class AttributeDocumenter" in sphinx/ext/autodoc/__init__.py → output of the 2 searches, in order: 1767: class DataDocumenter(ModuleLevelDocumenter):`},
			unwanted: []string{"3 hits"},
		},
		{
			name: "a listing then a grep in one line: the listing's lines are not the grep's hits",
			build: func(b *spanBuilder) {
				b.bash("Look around.", `ls -R | grep ":$" | head -n 3 && grep -r "class BaseConstraint" .`,
					rc(0, ".:\n./django:\n./docs:\n./django/db/models/constraints.py:class BaseConstraint:\n./tests/constraints/tests.py:class BaseConstraintTests(SimpleTestCase):"))
			},
			budget:   700,
			wanted:   []string{"output of the 2 commands, in order: .: | ./django: | ./docs: | ./django/db/models/constraints.py:class BaseConstraint:"},
			unwanted: []string{"5 hits"},
		},
		{
			name: "key lines of a changed file are read after its last change",
			build: func(b *spanBuilder) {
				b.bash("Read it.", "nl -ba xarray/core/variable.py | sed -n '1948,1952p'", rc(0, "  1950\t            data = PandasIndexAdapter(self._data.array.copy(deep=True))")).
					say("Line 1950 `data = PandasIndexAdapter(self._data.array.copy(deep=True))` drops the dtype.").
					bash("Fix it.", "sed -i '1950s/copy(deep=True))/copy(deep=True), dtype=self.dtype)/' xarray/core/variable.py", rc(0, ""))
			},
			budget:   900,
			unwanted: []string{"key lines: `1950"},
		},
		{
			name: "key lines of a file read are its code, not its imports",
			build: func(b *spanBuilder) {
				b.bash("Read it.", "cat django/contrib/auth/apps.py", rc(0, "from django.apps import AppConfig\nfrom django.db.models.signals import post_migrate\n\nclass AuthConfig(AppConfig):\n    def ready(self):\n        post_migrate.connect(create_permissions)\n        checks.register(check_user_model, checks.Tags.models)\n"+strings.Repeat("        pass\n", 60))).
					say("So `check_user_model` is registered in `AuthConfig.ready` with `checks.register`, and `post_migrate` creates permissions.")
			},
			budget:   900,
			wanted:   []string{"key lines: `checks.register(check_user_model, checks.Tags.models)`"},
			unwanted: []string{"`from django"},
		},
		{
			name: "an edit rejected again with other quoted text is one error, in its newest words; NEXT points at the state's quote of it",
			build: func(b *spanBuilder) {
				b.step("Replace it.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case A:\n  return t;", "new_str": "x"}`,
					"ERROR:\nNo replacement was performed, old_str `case A:\n  return t;` did not appear verbatim in /w/src/match.c.").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case B:\n\treturn t;", "new_str": "x"}`,
						"ERROR:\nNo replacement was performed, old_str `case B:\n\treturn t;` did not appear verbatim in /w/src/match.c.")
			},
			budget: 900,
			wanted: []string{"old_str `case B: ⏎ ⇥ return t;` did not appear verbatim in /w/src/match.c. [m0003, m0005] (2 tries, each with other text; the last one shown): unresolved",
				"- the last edit of /w/src/match.c was not made: ", "NEXT: the change to /w/src/match.c is still to be made: its edit was refused at [m0005] (2 tries) (the refusal STATE quotes), which left",
				"[mNNNN] = source message. In quoted code, ⏎ is a line break and ⇥ a tab.\n"},
			unwanted: []string{"`case A:"},
		},
		{
			name: "the refusals of edits of one file are one error line, with every refusal counted and another kind of refusal told",
			build: func(b *spanBuilder) {
				b.step("Replace it.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case A:", "new_str": "x"}`,
					"ERROR:\nNo replacement was performed, old_str `case A:` did not appear verbatim in /w/src/match.c.").
					step("Make it unique.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "return t;", "new_str": "x"}`,
						"ERROR:\nNo replacement was performed. Multiple occurrences of old_str `return t;` in lines [17, 49]. Please ensure it is unique.").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "new_str": "x"}`,
						"ERROR:\nParameter `old_str` is required for command: str_replace.").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case B:", "new_str": "x"}`,
						"ERROR:\nNo replacement was performed, old_str `case B:` did not appear verbatim in /w/src/match.c.")
			},
			budget: 900,
			wanted: []string{"old_str `case B:` did not appear verbatim in /w/src/match.c. [m0003 … m0009, 4×] (4 refused edits of the file; the last refusal shown; " +
				"one of them, [m0005], refused otherwise: No replacement was performed. Multiple occurrences of old_str `return t;` in lines [17, 49]. Please ensure it is unique.): unresolved",
				"its edit was refused at [m0009] (4 tries)"},
		},
		{
			name: "refusals of one kind, quoting other text or giving other lines, tell no other kind",
			build: func(b *spanBuilder) {
				b.step("Replace it.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case A:", "new_str": "x"}`,
					"ERROR:\nNo replacement was performed, old_str `case A:` did not appear verbatim in /w/src/match.c.").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case B:", "new_str": "x"}`,
						"ERROR:\nNo replacement was performed, old_str `case B:` did not appear verbatim in /w/src/match.c.").
					step("Edit the app.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/App.tsx", "old_str": "a", "new_str": "b("}`,
						"ERROR:\nedit rejected: new syntax error(s) /w/src/App.tsx:15").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/App.tsx", "old_str": "c", "new_str": "d("}`,
						"ERROR:\nedit rejected: new syntax error(s) /w/src/App.tsx:22")
			},
			budget:   900,
			wanted:   []string{"(2 refused edits of the file; the last refusal shown): unresolved"},
			unwanted: []string{"refused otherwise"},
		},
		{
			name: "a refusal of another kind that names no line of the file is not told, whatever its path holds",
			build: func(b *spanBuilder) {
				b.step("Replace it.", "str_replace_editor", `{"command": "str_replace", "path": "/w/sklearn/pipeline.py", "old_str": "a", "new_str": "x"}`,
					"ERROR:\nNo replacement was performed, old_str `a` did not appear verbatim in /w/sklearn/pipeline.py.").
					step("Again.", "str_replace_editor", `{"command": "str_replace", "path": "/w/sklearn/pipeline.py", "new_str": "x"}`,
						"ERROR:\nParameter `old_str` is required for command: str_replace.")
			},
			budget:   900,
			wanted:   []string{"(2 refused edits of the file; the last refusal shown): unresolved"},
			unwanted: []string{"refused otherwise"},
		},
		{
			name: "a refused edit after one that landed is told as after that change, not as the file's last edit",
			build: func(b *spanBuilder) {
				b.step("Insert the fix.", "str_replace_editor", `{"command": "insert", "path": "/w/src/match.c", "insert_line": 3, "new_str": "x = 1;"}`,
					"The file /w/src/match.c has been edited.").
					step("Replace it.", "str_replace_editor", `{"command": "str_replace", "path": "/w/src/match.c", "old_str": "case A:", "new_str": "x"}`,
						"ERROR:\nNo replacement was performed, old_str `case A:` did not appear verbatim in /w/src/match.c.")
			},
			budget:   900,
			wanted:   []string{"- changed: /w/src/match.c\n", "- an edit of /w/src/match.c after its change [m0003] was refused: "},
			unwanted: []string{"the last edit of /w/src/match.c"},
		},
		{
			name: "an insertion after a numbered line names that line's text from the editor's echo",
			build: func(b *spanBuilder) {
				b.step("Insert the fix.", "str_replace_editor", `{"command": "insert", "path": "/w/src/match.c", "insert_line": 317, "new_str": "if(iso){t = trn(t);}"}`,
					"The file /w/src/match.c has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n   316\t    case TK_MATCH_DONTCARE:\n   317\t      return pattern_type;\n   318\tif(iso){t = trn(t);}\n   319\t\n")
			},
			budget: 900,
			wanted: []string{"/w/src/match.c: inserted after line 317 `return pattern_type;`: `if(iso){t = trn(t);}` [m0003]"},
		},
		{
			name: "C code inserted after a return and before the next case label is said never to run",
			build: func(b *spanBuilder) {
				b.step("Insert the fix.", "str_replace_editor", `{"command": "insert", "path": "/w/src/match.c", "insert_line": 317, "new_str": "if(iso){t = trn(t);}"}`,
					"The file /w/src/match.c has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n   316\t    case TK_MATCH_DONTCARE:\n   317\t      return pattern_type;\n   318\tif(iso){t = trn(t);}\n   319\t\n   320\t    case TK_TUPLE:\n")
			},
			budget: 900,
			wanted: []string{"inserted after line 317 `return pattern_type;`: `if(iso){t = trn(t);}` (after a return, before the next label: it never runs) [m0003]"},
		},
		{
			name: "the index leaves out a name seen once in a listing, and keeps an exception",
			build: func(b *spanBuilder) {
				var names []string
				for i := range 40 { // more names than a listing tells whole
					names = append(names, fmt.Sprintf("NOTE%c.md", 'A'+i))
				}
				b.bash("List.", "ls", rc(0, strings.Join(names, "\n"))).
					bash("Run.", "python -c 'import sys'", rc(0, "ok")).
					say("Earlier runs raised `TimeCapsuleError` somewhere; not now.")
			},
			budget:   2000,
			wanted:   []string{"TimeCapsuleError"},
			unwanted: []string{"NOTEZ.md", "NOTE^.md", "NOTEg.md"},
		},
		{
			name: "the index leaves out an installed library's files",
			build: func(b *spanBuilder) {
				b.bash("Run.", "pytest -x tests/test_a.py", rc(1, "Traceback (most recent call last):\n  File \"/opt/conda/lib/python3.9/site-packages/pluggy/manager.py\", line 93, in _hookexec\n    return self._inner_hookexec(hook)\n  File \"/testbed/src/_pytest/main.py\", line 277, in wrap_session\n    config.hook.x()\nValueError: bad option")).
					bash("Again.", "pytest -x tests/test_a.py", rc(1, "Traceback (most recent call last):\n  File \"/opt/conda/lib/python3.9/site-packages/pluggy/manager.py\", line 93, in _hookexec\n    return self._inner_hookexec(hook)\n  File \"/testbed/src/_pytest/main.py\", line 277, in wrap_session\n    config.hook.x()\nValueError: bad option"))
			},
			budget:   2000,
			wanted:   []string{"/testbed/src/_pytest/main.py"},
			unwanted: []string{"site-packages"},
		},
		{
			name: "a grep that matched only a binary file did not find nothing",
			build: func(b *spanBuilder) {
				b.bash("Search.", `grep -r "This queryset contains a reference" django/db/models`,
					rc(0, "grep: django/db/models/__pycache__/expressions.cpython-36.pyc: binary file matches"))
			},
			budget: 600,
			wanted: []string{"→ no match in text files; binary files matched: django/db/models/__pycache__/expressions.cpython-36.pyc"},
		},
		{
			name: "a directory removed and made again by the same line's run is not gone",
			build: func(b *spanBuilder) {
				b.bash("Regenerate.", "rm -rf app/migrations && python3 manage.py makemigrations app",
					rc(0, "Migrations for 'app':\n  app/migrations/0001_initial.py\n    - Create model Outer"))
			},
			budget:   700,
			wanted:   []string{"0001_initial.py"},
			unwanted: []string{"app/migrations deleted"},
		},
		{
			name: "a side command's missing file is not resolved by a later run that fails otherwise",
			build: func(b *spanBuilder) {
				b.bash("Build and read the log.", "sphinx-build -b html . _build/html; cat /tmp/debug.log", rc(1, "build succeeded.\ncat: /tmp/debug.log: No such file or directory")).
					bash("Break it on purpose.", "echo 'SYNTAX ERROR HERE' >> sphinx/ext/autodoc/__init__.py", rc(0, "")).
					bash("Build.", "sphinx-build -b html . _build/html", rc(2, "SyntaxError: invalid syntax"))
			},
			budget:   800,
			unwanted: []string{"/tmp/debug.log: No such file or directory [m0003]: resolved"},
		},
		{
			name: "a question to the user that ends on a list keeps the question with its options",
			build: func(b *spanBuilder) {
				b.user("Cancel NQNU5R.").
					say("Could you please provide the reason for cancellation for the reservation with ID NQNU5R? The options are:\n\n1. Change of plan\n2. Airline cancelled flight\n3. Other reasons")
			},
			budget:   600,
			wanted:   []string{`NEXT: the user has not yet answered [m0004]: "Could you please provide the reason for cancellation for the reservation with ID NQNU5R? The options are: 1. Change of plan; 2. Airline cancelled flight; 3. Other reasons"`},
			unwanted: []string{"to the user: Could you"}, // quoted once, by the next step
		},
		{
			name: "options told as a list with sub-items keep each option's details and the closing question",
			build: func(b *spanBuilder) {
				b.user("Find me a nonstop flight.").
					say("Here are the nonstop flights on May 21:\n\n1. **Flight HAT052**\n   - Departure: 03:00 EST\n   - Economy Price: $125\n\n2. **Flight HAT102**\n   - Departure: 21:00 EST\n   - Economy Price: $117\n\nWhich one would you like?")
			},
			budget: 600,
			wanted: []string{"1. Flight HAT052: Departure 03:00 EST, Economy Price $125; 2. Flight HAT102: Departure 21:00 EST, Economy Price $117 Which one would you like?"},
		},
		{
			name: "a search's alike records are told by what tells them apart, at every level",
			build: func(b *spanBuilder) {
				b.user("Find me a nonstop flight from ATL to LAS on May 21.")
				var recs []string
				for i, dep := range []string{"03:00:00", "21:00:00", "01:00:00", "08:00:00"} {
					recs = append(recs, fmt.Sprintf(`{"flight_number": "HAT%03d", "origin": "ATL", "destination": "LAS", "scheduled_departure_time_est": %q, "status": "available", "available_seats": {"basic_economy": %d, "economy": 1%d, "business": 9}, "prices": {"basic_economy": 5%d, "economy": 12%d, "business": 328}}`, 52+i*50, dep, i+1, i, i, i))
				}
				b.step("", "search_direct_flight", `{"origin":"ATL","destination":"LAS","date":"2024-05-21"}`, "["+strings.Join(recs, ", ")+"]")
			},
			budget: 3000, // room for the fullest level
			wanted: []string{"4 records (columns: scheduled_departure_time_est; available_seats (basic_economy, economy, business); prices (basic_economy, economy, business)): HAT052 03:00, 1/10/9, 50/120/328 | HAT102 21:00, 2/11/9, 51/121/328"},
			// the same fields written out per record, cut before the prices
			unwanted: []string{"HAT052: origin ATL; destination LAS"},
		},
		{
			name: "files moved into a directory are not still present where they were",
			build: func(b *spanBuilder) {
				b.bash("Set up the case.", "mkdir -p .a; echo \"import re\" > .a/foo.py; echo \"import re\" > bar.py", rc(0, "")).
					bash("Move the scratch files out of the way.", "mkdir -p reproduction; mv .a reproduction/; mv bar.py reproduction/", rc(0, ""))
			},
			budget: 1200,
			wanted: []string{".a/foo.py (moved to reproduction/)", "bar.py (moved to reproduction/)", "bar.py: created [m0003]; moved to reproduction/ [m0005]"},
			// The directory joined with a name is a path the conversation never wrote.
			unwanted: []string{"reproduction/bar.py", "created and still present: .a/foo.py,", "reproduction/: "},
		},
		{
			name: "a file renamed over another is not still present",
			build: func(b *spanBuilder) {
				b.bash("Edit through a copy.", "sed 's/a/b/' base.py > base.py.tmp && mv base.py.tmp base.py", rc(0, ""))
			},
			budget:   1200,
			wanted:   []string{"base.py: edited through base.py.tmp"},
			unwanted: []string{"base.py.tmp (moved to", "still present: base.py.tmp"},
		},
		{
			name: "a small file written and then read is shown whole, without key lines after its content",
			build: func(b *spanBuilder) {
				b.bash("Write a probe.", "cat <<'EOF' > inspect.py\nfrom m import split\nprint(split('omega0'))\nEOF\npython inspect.py", rc(0, "('omega', [], ['0'])")).
					bash("Look at it again.", "cat inspect.py", rc(0, "from m import split\nprint(split('omega0'))")).
					bash("So `print(split('omega0'))` splits the name; `from m import split` is the one to check.", "grep -n 'def split' m.py", rc(0, "13:def split(text):"))
			},
			budget:   1200,
			wanted:   []string{"content:\n    from m import split\n    print(split('omega0'))"},
			unwanted: []string{"key line"},
		},
		{
			name: "a bulleted list is told without its bullets",
			build: func(b *spanBuilder) {
				b.user("Change it.").
					say("Here are the details:\n\n- **Flight:** HAT229\n- **Total Cost:** $239\n\nPlease confirm.")
			},
			budget: 600,
			wanted: []string{`"Here are the details: Flight: HAT229; Total Cost: $239 Please confirm."`},
		},
		{
			name: "options of options: each told whole, repeated keys given once when room is short, the rest counted",
			build: func(b *spanBuilder) {
				opt := func(n int, a, c string) string {
					return fmt.Sprintf("%d. **Flight Option %d:**\n   - **First Leg:**\n     - Flight Number: %s\n     - Departure: 04:00 AM from DEN\n     - Cabin: Economy ($112), Business ($438)\n   - **Second Leg:**\n     - Flight Number: %s\n     - Departure: 01:00 PM from LAS\n     - Cabin: Economy ($130)\n", n, n, a, c)
				}
				b.user("Change my return flight to the quickest one.").
					say("Here are the one-stop flights:\n\n" + opt(1, "HAT084", "HAT266") + "\n" + opt(2, "HAT229", "HAT266") + "\n" + opt(3, "HAT290", "HAT175") + "\n" + opt(4, "HAT291", "HAT176") + "\n" + opt(5, "HAT292", "HAT177") + "\n" + opt(6, "HAT293", "HAT178") + "\nWhich option would you like?")
			},
			budget: 420,
			wanted: []string{
				"1. Flight Option 1: First Leg: Flight Number HAT084, Departure 04:00 AM from DEN, Cabin Economy ($112), Business ($438); Second Leg: HAT266, 01:00 PM from LAS, Economy ($130) | 2. Flight Option 2: First Leg: HAT229,",
				"(+1 more) Which option would you like?",
			},
		},
		{
			name: "removing a missing file is not the error of a line that fails later",
			build: func(b *spanBuilder) {
				b.bash("Clean, build, read the log.", "rm /tmp/debug.log; sphinx-build -b html . _build/html; cat /tmp/debug.log",
					rc(1, "rm: cannot remove '/tmp/debug.log': No such file or directory\nbuild succeeded.\ncat: /tmp/debug.log: No such file or directory"))
			},
			budget:   700,
			wanted:   []string{"cat: /tmp/debug.log: No such file or directory"},
			unwanted: []string{"exit 1: rm: cannot remove"},
		},
		{
			name: "a sed script that inserts lines says where and what",
			build: func(b *spanBuilder) {
				b.bash("Add the check.", `sed -i '/if "." in name:/i \    if not name:\n        raise ValueError("\x27name\x27 may not be empty.")' src/flask/blueprints.py`, rc(0, ""))
			},
			budget: 600,
			wanted: []string{"inserted before each line matching `if \".\" in name:`: `if not name: ⏎ raise ValueError(\"'name' may not be empty.\")`"},
		},
		{
			name: "a sed range deletion with a pattern says what it covers: every range, to the end when no end follows",
			build: func(b *spanBuilder) {
				b.bash("Take the fix out.", `sed -i '/if call.when == "call":/,/item._store\[xfailed_key\] =/d' src/_pytest/skipping.py`, rc(0, "")).
					bash("Cut the tail.", `sed -i '/^# END/,$d' notes.txt`, rc(0, "")).
					bash("And this.", `sed -i '12,/^def /d' a.py`, rc(0, ""))
			},
			budget: 900,
			wanted: []string{"deleted from each line matching `if call.when == \"call\":` through the next matching `item._store\\[xfailed_key\\] =` (or the file's end) [m0003]",
				"notes.txt: deleted from the first line matching `^# END` to the file's end [m0005]",
				"a.py: deleted from line 12 through the next matching `^def` (or the file's end) [m0007]"},
			unwanted: []string{"matching `^# END/,$`"},
		},
		{
			name: "a view of a changed file between changes its line counts in a range is not told by that range",
			build: func(b *spanBuilder) {
				b.bash("Try one.", "sed -i 's/a = 1/a = 2/' app.py", rc(0, "")).
					bash("Look.", "nl -ba app.py | sed -n '1,5p'", rc(0, "     1\ta = 2\n     2\tb = 3")).
					bash("Try two.", "sed -i 's/b = 3/b = 4/' app.py", rc(0, "")).
					bash("Try three.", "sed -i 's/c = 5/c = 6/' app.py", rc(0, "")).
					bash("Start over.", "git checkout app.py", rc(0, "Updated 1 path from the index")).
					bash("The fix.", "sed -i 's/d = 7/d = 8/' app.py", rc(0, ""))
			},
			budget: 900,
			wanted: []string{"3 changes [m0003–m0009] undone by git checkout [m0011]", "LEFT OUT FOR SIZE: 1 file view at m0005"},
		},
		{
			name: "a line that writes a script and runs it: the run's output is the result",
			build: func(b *spanBuilder) {
				b.bash("Check it.", "cat <<'EOF' > check.py\nimport numpy as np\nprint(np.iinfo(np.int8).max)\nEOF\npython check.py", rc(0, "127")).
					bash("Fix.", "sed -i 's/int8/uint8/' check.py && pytest tests/test_x.py", rc(1, "tests/test_x.py::test_max FAILED\n1 failed, 3 passed in 0.2s"))
			},
			budget:   800,
			wanted:   []string{"last run [m0003] → 127", "last check after the last change: [m0005]", "1 failed, 3 passed"},
			unwanted: []string{"not run, tested or sent"},
		},
		{
			name: "a line that rewrote a script and ran it keeps its run's result when a later run is the file's last",
			build: func(b *spanBuilder) {
				b.bash("Reproduce near midnight.", "cat <<'EOF' > repro.py\nprint('Exists:', check(23, 50))\nEOF\npython3 repro.py", rc(0, "Exists: False\nFAILURE: Query returned False")).
					bash("Patch the backend.", "sed -i 's/tz = utc/tz = db_tz/' django/db/backends/sqlite3/base.py", rc(0, "")).
					bash("Run it again.", "python3 repro.py", rc(0, "Exists: True\nSUCCESS: Query returned True"))
			},
			budget: 900,
			wanted: []string{"[m0003] write repro.py (1 line, here-document) → Exists: False | FAILURE: Query returned False",
				"last run [m0007] → the last check, in STATE"},
		},
		{
			name: "a build log's banner and progress are not its result; the file shown last is",
			build: func(b *spanBuilder) {
				b.bash("Build.", "cd repro && sphinx-build -b text . _build/text && cat _build/text/index.txt",
					rc(0, "Running Sphinx v3.2.0\nmaking output directory... done\nreading sources... [100%] index\nbuild succeeded.\nclass Foo\n   _private_method()\n      Private method doc.\n"))
			},
			budget:   600,
			wanted:   []string{"Private method doc."},
			unwanted: []string{"Running Sphinx"},
		},
		{
			name: "OpenHands skills in a Python cell: open_file reads, edit_file_by_replace says what it replaced",
			build: func(b *spanBuilder) {
				b.step("Edit the CSS.", "execute_ipython_cell", `{"code": "edit_file_by_replace(\n'/w/App.css',\nto_replace=\"\"\"#root {\n  padding: 2rem;\n}\"\"\",\nnew_content=\"\"\"#root {\n  padding: 2rem;\n}\n.dark-mode {\n  background: #242424;\n}\"\"\"\n)"}`, "[File: /w/App.css (8 lines total after edit)]").
					step("Look at the app.", "execute_ipython_cell", `{"code": "open_file('/w/App.tsx')"}`, "[File: /w/App.tsx (14 lines total)]\n1|import React from 'react'")
			},
			budget:   700,
			wanted:   []string{"added `.dark-mode {`", "not run, tested or sent since the last change [m0003]"},
			unwanted: []string{"last check after the last change", "edited by a Python cell"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b spanBuilder
			tc.build(&b)
			d := write(t, b.msgs, tc.budget)
			mustContain(t, d.Text, tc.wanted...)
			mustNotContain(t, d.Text, tc.unwanted...)
		})
	}
	t.Run("a record whose values a later search used outranks newer ones", func(t *testing.T) {
		var b spanBuilder
		b.user("My user ID is sofia_kim_7287.").
			step("", "get_reservation_details", `{"reservation_id":"OBUT9V"}`, `{"reservation_id": "OBUT9V", "origin": "IAH", "destination": "DEN", "flights": [{"flight_number": "HAT078", "date": "2024-05-27"}], "cabin": "economy"}`)
		for _, id := range []string{"4BMN53", "Q0ZF0J", "ZZ1234", "YY5678"} {
			b.step("", "get_reservation_details", `{"reservation_id":"`+id+`"}`, `{"reservation_id": "`+id+`", "origin": "LGA", "destination": "LAS", "flights": [{"flight_number": "HAT201", "date": "2024-05-22"}], "cabin": "business"}`)
		}
		b.step("", "search_direct_flight", `{"origin":"DEN","destination":"IAH","date":"2024-05-27"}`, `[]`)
		in := Input{Span: b.msgs, BudgetTokens: 200, CountTokens: counter(t)}
		d, err := Write(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, d.Text, "OBUT9V [m0004]: IAH-DEN")
	})
	t.Run("the issue's words the agent quotes are not its findings", func(t *testing.T) {
		issue := "Autoreload breaks on empty string in TEMPLATES DIRS. This happens because django/template/autoreload.py::template_changed was previously comparing the empty string to a directory, and would never match."
		var b spanBuilder
		b.bash("THOUGHT: The PR says:\n> This happens because django/template/autoreload.py::template_changed was previously comparing the empty string to a directory, and would never match.\n\nSo the bug is that `template_changed` now returns True for every file.",
			"cat django/template/autoreload.py", rc(0, "def template_changed(sender, file_path, **kwargs):\n    return True")).
			bash("The PR description says: \"This happens because django/template/autoreload.py::template_changed was previously comparing the empty string\". I should check to_path.",
				"grep -n to_path django/utils/_os.py", rc(0, "12:def to_path(value):"))
		in := Input{Head: []briefd.Message{{ID: "m0002", Role: briefd.RoleUser, Content: briefd.Text(issue)}}, Span: b.msgs, BudgetTokens: 900, CountTokens: counter(t)}
		d, err := Write(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, d.Text, "So the bug is that `template_changed` now returns True for every file.")
		if strings.Contains(d.Text, "was previously comparing") {
			t.Fatalf("the issue's quoted words are listed as the agent's:\n%s", d.Text)
		}
	})
	t.Run("a record the agent concluded on outranks a newer one", func(t *testing.T) {
		build := func(conclude bool) *spanBuilder {
			var b spanBuilder
			b.step("", "get_reservation_details", `{"reservation_id":"59XX6W"}`, `{"reservation_id": "59XX6W", "origin": "LAS", "destination": "ATL", "cabin": "economy", "insurance": "yes", "payment": "credit_card_2408938 624"}`)
			if conclude {
				b.say("Reservation 59XX6W can be canceled because it has travel insurance.")
			} else {
				b.say("Noted.")
			}
			for _, id := range []string{"7WPL39", "K2LM0P", "Q8TR5V"} {
				b.step("", "get_reservation_details", `{"reservation_id":"`+id+`"}`, `{"reservation_id": "`+id+`", "origin": "DEN", "destination": "EWR", "cabin": "basic_economy", "insurance": "no", "payment": "credit_card_4303738 402"}`)
			}
			return &b
		}
		var kept [2]bool
		for i, conclude := range []bool{false, true} {
			b := build(conclude)
			d, err := Write(context.Background(), Input{Span: b.msgs, BudgetTokens: 200, CountTokens: counter(t)})
			if err != nil {
				t.Fatal(err)
			}
			kept[i] = strings.Contains(d.Text, "- 59XX6W [m0003]")
		}
		if kept[0] || !kept[1] {
			t.Fatalf("59XX6W kept without the conclusion: %v, with it: %v (the budget should hold three of the four records)", kept[0], kept[1])
		}
	})
	t.Run("the index leaves out names the pinned head already gives", func(t *testing.T) {
		issue := "See https://code.djangoproject.com/ticket/32744 for the regression in TEMPLATES DIRS."
		var b spanBuilder
		b.bash("The ticket https://code.djangoproject.com/ticket/32744 links https://code.djangoproject.com/ticket/33285 too.",
			"cat django/template/autoreload.py", rc(0, "def template_changed(sender, file_path, **kwargs):\n    return True"))
		in := Input{Head: []briefd.Message{{ID: "m0002", Role: briefd.RoleUser, Content: briefd.Text(issue)}}, Span: b.msgs, BudgetTokens: 900, CountTokens: counter(t)}
		d, err := Write(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, d.Text, "https://code.djangoproject.com/ticket/33285")
		if strings.Contains(d.Text, "ticket/32744") {
			t.Fatalf("the head's link is indexed again:\n%s", d.Text)
		}
		in.Head = nil
		if d, err = Write(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		mustContain(t, d.Text, "ticket/32744")
	})
	t.Run("a focus raises what it names", func(t *testing.T) {
		var b spanBuilder
		for i := range 30 {
			b.bash("Look.", fmt.Sprintf("cat pkg/file%02d.go", i), rc(0, strings.Repeat("package x // filler line\n", 30)))
		}
		b.bash("Migration status.", "cat migrations/0042_widgets.sql", rc(0, "ALTER TABLE widgets ADD COLUMN size int;"))
		in := Input{Span: b.msgs, BudgetTokens: 300, CountTokens: counter(t)}
		d, err := Write(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		in.Focus = "file03"
		f, err := Write(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(d.Text, "pkg/file03.go") || !strings.Contains(f.Text, "pkg/file03.go") || !strings.Contains(f.Text, "focus asked for") {
			t.Fatalf("focus did not raise file03:\nwithout:\n%s\nwith:\n%s", d.Text, f.Text)
		}
	})
}

// histories returns the shipped example histories and, when present, the
// shared ones.
func histories(t testing.TB) map[string][]briefd.Message {
	t.Helper()
	out := map[string][]briefd.Message{}
	for _, dir := range []string{"testdata", "../../examples/histories", "../../../shared/data/histories"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h, err := briefd.ParseHistory(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[strings.TrimSuffix(filepath.Base(f), ".json")] = h.Messages
		}
	}
	return out
}

// headAndSpan splits a history frozen at 70% the way the engine does with
// a 25% tail: the pinned head (system, first user) and the span.
func headAndSpan(msgs []briefd.Message) (head, span []briefd.Message) {
	cut := len(msgs) * 7 / 10
	end := cut * 3 / 4
	for end > 2 && msgs[end].Role == briefd.RoleTool {
		end--
	}
	seenUser := false
	for _, m := range msgs[:end] {
		if m.Role == briefd.RoleSystem || m.Role == briefd.RoleUser && !seenUser {
			seenUser = seenUser || m.Role == briefd.RoleUser
			head = append(head, m)
			continue
		}
		span = append(span, m)
	}
	// A span must not start with tool results whose call is in the head.
	for len(span) > 0 && span[0].Role == briefd.RoleTool {
		span = span[1:]
	}
	return head, span
}

// Properties on real histories: the budget holds, every user message is
// there verbatim, no identifier is made up, the same input gives the same
// bytes with or without a warm cache, the record stays within twice the
// text, and the text parses back into the entries the record holds.
func TestWriteProperties(t *testing.T) {
	count := counter(t)
	cache := NewCache(0, 0)
	for name, msgs := range histories(t) {
		head, span := headAndSpan(msgs)
		if len(span) < 4 {
			continue
		}
		spanText := ""
		for _, m := range span {
			spanText += m.Content.String() + "\n"
			for _, c := range m.ToolCalls {
				spanText += c.Function.Arguments + "\n"
			}
		}
		for _, budget := range []int{512, 1000, 3000} {
			in := Input{Head: head, Span: span, BudgetTokens: budget, CountTokens: count}
			cold, err := Write(context.Background(), in)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			in.Cache = cache
			warm, err := Write(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			warm2, _ := Write(context.Background(), in)
			if cold.Text != warm.Text || warm.Text != warm2.Text {
				t.Fatalf("%s/%d: not deterministic", name, budget)
			}
			if n := count(briefd.WrapBriefing(cold.Text)); n > cold.BudgetTokens || cold.BudgetTokens < budget {
				t.Fatalf("%s/%d: %d tokens over the budget %d", name, budget, n, cold.BudgetTokens)
			}
			for _, m := range span {
				if m.Role == briefd.RoleUser && !isHarness(m.Content.String()) && !isToolError(strings.TrimSpace(m.Content.String())) {
					if u := strings.TrimSpace(m.Content.String()); len(u) < 3000 && !strings.Contains(cold.Text, u) {
						t.Errorf("%s/%d: user message %s not verbatim", name, budget, m.ID)
					}
				}
			}
			for _, id := range ident.Identifiers(cold.Text) {
				if !strings.Contains(spanText, id) && !messageIDsRe.MatchString(id) {
					t.Errorf("%s/%d: identifier %q is not in the span", name, budget, id)
				}
			}
			if len(cold.Structured) > 2*len(cold.Text)+2048 {
				t.Errorf("%s/%d: record %d bytes for a text of %d", name, budget, len(cold.Structured), len(cold.Text))
			}
			var rec Record
			if err := json.Unmarshal(cold.Structured, &rec); err != nil || rec.Format != RecordFormat {
				t.Fatalf("%s: record %v", name, err)
			}
			parsed := parseText(cold.Text)
			for _, sec := range rec.Sections {
				s := sectionByKey[sec.Name]
				if s == secOmitted || inline[s] {
					continue
				}
				if len(parsed.entries[s]) != len(sec.Entries) {
					t.Errorf("%s/%d: section %s: text parses to %d entries, record has %d", name, budget, sec.Name, len(parsed.entries[s]), len(sec.Entries))
				}
			}
		}
	}
}

// Chained compaction: a briefing folded into the next keeps the user's
// messages verbatim and the earlier changes, through several cycles, with
// the structured record or from the text alone.
func TestChainedFolding(t *testing.T) {
	count := counter(t)
	var b spanBuilder
	b.user("Keep the public API unchanged.").
		bash("Fix line 917.", "sed -i '917s/_default_manager/_base_manager/' related.py", rc(0, ""))
	first := write(t, b.msgs, 600)
	prev := &briefd.Briefing{BoundaryID: "m0010", Text: first.Text, Structured: first.Structured, Depth: first.Depth}
	for cycle := range 5 {
		for _, withRecord := range []bool{true, false} {
			msg := briefd.BriefingMessage(prev)
			var c spanBuilder
			c.n = 10 + cycle*10
			c.bash("Look around.", fmt.Sprintf("cat pkg/other%d.go", cycle), rc(0, "package other"))
			span := append([]briefd.Message{msg}, c.msgs...)
			in := Input{Span: span, BudgetTokens: 600, CountTokens: count}
			if withRecord {
				in.Previous = prev
			}
			d, err := Write(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, d.Text, "Keep the public API unchanged.", "related.py", "line 917", "Covers m0003–", "an earlier briefing folded in")
			if d.Depth != cycle+1 && withRecord {
				t.Errorf("cycle %d: depth %d", cycle, d.Depth)
			}
			if withRecord {
				prev = &briefd.Briefing{BoundaryID: fmt.Sprintf("m%04d", 30+cycle*10), Text: d.Text, Structured: d.Structured, Depth: d.Depth}
			}
		}
	}
}

// A step line that pointed at its briefing's last check gets that check's
// result back when the briefing is folded: the next state tells another.
func TestFoldedPointerToStateGetsItsResult(t *testing.T) {
	count := counter(t)
	var b spanBuilder
	b.bash("Fix it.", "sed -i 's/required = True/required = False/' pixels.py", rc(0, "")).
		bash("Check.", "python repro.py", rc(1, "AttributeError: Unable to convert the pixel data as the following required elements are missing: PixelRepresentation"))
	first := write(t, b.msgs, 900)
	mustContain(t, first.Text, "- [m0005] python repro.py → the last check, in STATE",
		"ERRORS:\n- the error of the last check, in STATE [m0005]: unresolved")
	// The record stands alone: an engine that folds it without knowing the
	// pointer, or any other consumer, reads the result.
	mustContain(t, string(first.Structured), `- [m0005] python repro.py → exit 1: AttributeError: Unable to convert`)
	mustContain(t, string(first.Structured), `- exit 1: AttributeError: Unable to convert the pixel data as the following required elements are missing: PixelRepresentation [m0005]: unresolved`)
	mustNotContain(t, string(first.Structured), "the last check, in STATE", errInState)
	prev := &briefd.Briefing{BoundaryID: "m0010", Text: first.Text, Structured: first.Structured, Depth: first.Depth}
	for _, withRecord := range []bool{true, false} {
		var c spanBuilder
		c.n = 10
		c.bash("Fix again.", "sed -i 's/x = 1/x = 2/' pixels.py", rc(0, "")).
			bash("Check.", "python repro.py", rc(0, "decoded 25 pixels"))
		in := Input{Span: append([]briefd.Message{briefd.BriefingMessage(prev)}, c.msgs...), BudgetTokens: 1200, CountTokens: count}
		if withRecord {
			in.Previous = prev
		}
		d, err := Write(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, d.Text, "- [m0005] python repro.py → exit 1: AttributeError: Unable to convert the pixel data", "last check after the last change: [m0015] python repro.py → decoded 25 pixels")
		mustNotContain(t, d.Text, "[m0005] python repro.py → the last check", errInState)
		mustContain(t, d.Text, "AttributeError: Unable to convert the pixel data as the following required elements are missing: PixelRepresentation [m0005]")
	}
}

// A 5.9 MB tool output: the text and the record stay within the budget.
func TestHugeOutputIsBounded(t *testing.T) {
	var b spanBuilder
	huge := strings.Repeat("row 12345 value=abc_def_6789 /srv/data/file_0001.csv ok\n", 6_000_000/56)
	b.user("Summarize the export.").bash("Dump it.", "cat export.csv", rc(0, huge))
	d := write(t, b.msgs, 1000)
	count := counter(t)
	whole, _ := json.Marshal(struct {
		Text       string
		Structured json.RawMessage
		Coverage   Coverage
	}{d.Text, d.Structured, d.Coverage})
	if n := count(string(whole)); n > 2*d.BudgetTokens {
		t.Fatalf("record %d tokens for a budget of %d", n, d.BudgetTokens)
	}
}

func TestWriteStopsWithContext(t *testing.T) {
	var b spanBuilder
	for range 300 {
		b.bash("x", "ls", rc(0, "a"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, Input{Span: b.msgs, BudgetTokens: 500, CountTokens: counter(t), Cache: NewCache(0, 0)}); err == nil {
		t.Fatal("no error from a cancelled context")
	}
}

func FuzzWrite(f *testing.F) {
	f.Add(uint64(1), "sed -i 's/a/b/' x.py", "<returncode>1</returncode>\nTraceback (most recent call last):\nValueError: x", "Please fix it")
	f.Add(uint64(7), "cat <<'EOF' > a\nb\nEOF", `{"reservation_id": "ABC123", "x": [1, {"id": "Q"}]}`, "ERROR:")
	f.Add(uint64(3), "patch", "[File: /a (3 lines total)]\n1:a", "")
	count := counter(f)
	f.Fuzz(func(t *testing.T, seed uint64, cmd, out, user string) {
		r := rand.New(rand.NewPCG(seed, 1))
		var b spanBuilder
		tools := []string{"bash", "str_replace_editor", "get_x", "cancel_y", "think", "execute_ipython_cell"}
		for range 1 + r.IntN(12) {
			switch r.IntN(4) {
			case 0:
				b.user(user)
			case 1:
				b.say(user + " " + cmd)
			default:
				tool := tools[r.IntN(len(tools))]
				args, _ := json.Marshal(map[string]any{"command": cmd, "path": cmd, "old_str": out, "new_str": cmd, "code": cmd, "reservation_id": user})
				if r.IntN(5) == 0 {
					args = []byte(cmd)
				}
				b.step(user, tool, string(args), out)
			}
		}
		budget := 200 + r.IntN(2000)
		d, err := Write(context.Background(), Input{Span: b.msgs, BudgetTokens: budget, CountTokens: count})
		if err != nil {
			t.Fatal(err)
		}
		if n := count(briefd.WrapBriefing(d.Text)); n > d.BudgetTokens {
			t.Fatalf("%d tokens over %d", n, d.BudgetTokens)
		}
	})
}

func TestEditThroughACopy(t *testing.T) {
	var b spanBuilder
	b.bash("", `sed -i 's/a/b/' pkg/base.py`, rc(0, "")).
		bash("", "sed 's/^        conn/    conn/' pkg/base.py > pkg/base.py.tmp && mv pkg/base.py.tmp pkg/base.py", rc(0, ""))
	d := write(t, b.msgs, 800)
	mustContain(t, d.Text, "pkg/base.py: `a` → `b` [m0003]; edited through pkg/base.py.tmp (sed) [m0005]")
	mustNotContain(t, d.Text, "rewritten whole")
	c := classifyCall("bash", `{"command": "sed -i 's/^        conn.create/    conn.create/' base.py"}`)
	if len(c.ops) != 1 || !strings.Contains(c.ops[0].what, "(whitespace: indentation)") {
		t.Fatalf("a change of indentation: %+v", c.ops)
	}
}

// A briefing written before the index was labelled ALSO MENTIONED (the
// store keeps them) folds with its names.
func TestFoldReadsEarlierIndexLabels(t *testing.T) {
	for _, label := range []string{"ALSO SEEN (names in the compacted messages; expand_history finds them)", "ALSO SEEN", sectionNames[secIndex] + indexNote} {
		p := parseText("Covers m0003–m0010 (8 messages)\nSTATE:\n- no file changed yet\n" + label + ": a/b.py, ValueError\n")
		if !slices.Equal(p.index, []string{"a/b.py", "ValueError"}) {
			t.Errorf("%s: index %q", label, p.index)
		}
	}
}

func TestOnlyAsks(t *testing.T) {
	for text, want := range map[string]bool{
		"I can help you with that. Could you please provide your user ID and the reservation ID?": true,
		"Could you please confirm which reservation? 1. Z7GOZK 2. K67C4W":                         false,
		"Your reservation XEHM4B is basic economy. Would you like to proceed?":                    false,
		"Thank you.": false,
		"Sure. Which reservation would you like to change?":                     true,
		"Sorry, basic economy can't be refunded. Anything else?":                false,
		"Your reservation has been cancelled. Is there anything else?":          false,
		"The change fee is $150. Do you want to proceed?":                       false,
		"Would you like me to cancel it and refund $1,250 to your credit card?": false,
		"Shall I go ahead with the change?":                                     false,
	} {
		if got := onlyAsks(text); got != want {
			t.Errorf("onlyAsks(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestIsReading(t *testing.T) {
	for s, want := range map[string]bool{
		"The reproduction script confirms the issue.":              true,
		"It crashed again with the same error.":                    true,
		"Thank you for providing the project structure.":           false,
		"Thanks, that shows the layout of the project.":            false,
		"Try to locate the current directory":                      false,
		"Thanks to the fix, the parser now accepts empty headers.": true,
		"Running the script to see what it prints.":                false,
		"Does the output show the second debug line?":              false,
	} {
		if got := isReading(s); got != want {
			t.Errorf("isReading(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"The issue is resolved for `sympy.Array(3)`. Next I run the tests.", []string{"The issue is resolved for `sympy.Array(3)`.", "Next I run the tests."}},
		{"It calls sympy.Array(3) and fails.", []string{"It calls sympy.Array(3) and fails."}},
		{"I checked the message.Next, I'll fix it.", []string{"I checked the message.", "Next, I'll fix it."}},
	} {
		if got := sentences(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("sentences(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// flight writes a flight search result the way tau-bench's airline tools do.
func flight(num, from, to, dep, arr string, econ, bus int) string {
	return fmt.Sprintf(`{"flight_number": %q, "origin": %q, "destination": %q, "scheduled_departure_time_est": "%s:00", "scheduled_arrival_time_est": "%s:00", "status": "available", "available_seats": {"economy": 7, "business": 11}, "prices": {"economy": %d, "business": %d}, "date": "2024-05-24"}`, num, from, to, dep, arr, econ, bus)
}

func TestOptionsDigest(t *testing.T) {
	a, b := flight("HAT069", "JFK", "SEA", "06:00", "12:00", 123, 333), flight("HAT083", "JFK", "SEA", "01:00", "07:00", 137, 485)
	x, y := flight("HAT011", "SEA", "SFO", "13:00", "15:00", 177, 294), flight("HAT258", "SEA", "SFO", "17:00", "19:00", 167, 417)
	recs := parseRecords("["+strings.Join([]string{"[" + a + ", " + x + "]", "[" + a + ", " + y + "]", "[" + b + ", " + x + "]"}, ", ")+"]", "")
	named := func(string) bool { return false }
	for _, tc := range []struct {
		level int
		want  string
	}{
		{levelFull, "2 parts: HAT069 then HAT011 or HAT258; HAT083 then HAT011; the parts (columns: origin-destination; departure-arrival; prices (economy, business)): " +
			"HAT069 JFK-SEA, 06:00-12:00, 123/333 | HAT011 SEA-SFO, 13:00-15:00, 177/294 | HAT258 SEA-SFO, 17:00-19:00, 167/417 | HAT083 JFK-SEA, 01:00-07:00, 137/485"},
		{levelMin, "2 parts: HAT069 then HAT011 or HAT258; HAT083 then HAT011; the parts (departure-arrival; prices (economy, business)): " +
			"HAT069 06:00-12:00, 123/333 | HAT011 13:00-15:00, 177/294 | HAT258 17:00-19:00, 167/417 | HAT083 01:00-07:00, 137/485"},
	} {
		if got := optionsDigest(recs, tc.level, named); got != tc.want {
			t.Errorf("level %d:\n got %q\nwant %q", tc.level, got, tc.want)
		}
	}
	// Parts that do not chain have no route; a plain list is no options list.
	if got := optionsDigest(parseRecords("["+a+", "+x+"]", ""), levelFull, named); got != "" {
		t.Errorf("a plain list: %q", got)
	}
	if got := recordsDigest(parseRecords("["+a+", "+b+"]", ""), levelMin, named); got != "(departure-arrival; prices (economy, business)): HAT069 06:00-12:00, 123/333 | HAT083 01:00-07:00, 137/485" {
		t.Errorf("the least detail leaves out the seats and joins the times: %q", got)
	}
	// Numbers under other keys in another record make no column; two
	// clock columns that are not a span's two ends stay apart.
	odd := parseRecords(`[{"id": "A1", "dep": "06:00", "prices": {"economy": 100, "business": 300}}, {"id": "A2", "dep": "07:00", "prices": {"basic_economy": 50, "economy": 120}}]`, "")
	if got := recordsDigest(odd, levelMin, func(w string) bool { return w == "economy" }); strings.Contains(got, "prices") {
		t.Errorf("prices under other keys: %q", got)
	}
	trip := parseRecords(`[{"id": "T1", "departure_time": "06:00", "travel_time": "02:30"}, {"id": "T2", "departure_time": "08:00", "travel_time": "01:45"}]`, "")
	if got := recordsDigest(trip, levelFull, nil); got != "(columns: departure_time; travel_time): T1 06:00, 02:30 | T2 08:00, 01:45" {
		t.Errorf("a duration is not an arrival: %q", got)
	}
	economy := func(w string) bool { return w == "economy" }
	if got := recordsDigest(parseRecords("["+a+", "+b+"]", ""), levelMin, economy); got != "(departure-arrival; prices (economy)): HAT069 06:00-12:00, 123 | HAT083 01:00-07:00, 137" {
		t.Errorf("the least detail keeps the prices of the cabin the user named: %q", got)
	}
	if got := recordsDigest(parseRecords("["+a+", "+b+"]", ""), levelShort, economy); !strings.Contains(got, "123/333") {
		t.Errorf("more detail keeps every cabin: %q", got)
	}
}

// TestPricedOptions: at the least detail, combinations carry the one price
// the user named beside each part, which choosing between them needs.
func TestPricedOptions(t *testing.T) {
	a, b := flight("HAT069", "JFK", "SEA", "06:00", "12:00", 123, 333), flight("HAT083", "JFK", "SEA", "01:00", "07:00", 137, 485)
	x, y := flight("HAT011", "SEA", "SFO", "13:00", "15:00", 177, 294), flight("HAT258", "SEA", "SFO", "17:00", "19:00", 167, 417)
	recs := parseRecords("["+strings.Join([]string{"[" + a + ", " + x + "]", "[" + a + ", " + y + "]", "[" + b + ", " + x + "]"}, ", ")+"]", "")
	economy := func(w string) bool { return w == "economy" }
	if got, want := pricedOptions(recs, economy), "2 parts (economy price of each): HAT069 123 then HAT011 177 or HAT258 167; HAT083 137 then HAT011 177"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// "basic economy" names economy too: the longer is meant.
	basic := func(w string) bool { return w == "basic_economy" || w == "economy" }
	b1, b2 := flight("HAT069", "JFK", "SEA", "06:00", "12:00", 123, 333), flight("HAT011", "SEA", "SFO", "13:00", "15:00", 177, 294)
	b1 = strings.Replace(b1, `"prices": {`, `"prices": {"basic_economy": 61, `, 1)
	b2 = strings.Replace(b2, `"prices": {`, `"prices": {"basic_economy": 75, `, 1)
	b3 := strings.Replace(flight("HAT258", "SEA", "SFO", "17:00", "19:00", 167, 417), `"prices": {`, `"prices": {"basic_economy": 80, `, 1)
	withBasic := parseRecords("[["+b1+", "+b2+"], ["+b1+", "+b3+"]]", "")
	if got, want := pricedOptions(withBasic, basic), "2 parts (basic_economy price of each): HAT069 61 then HAT011 75 or HAT258 80"; got != want {
		t.Errorf("basic economy:\n got %q\nwant %q", got, want)
	}
	// No class named, or every class: which price would be a guess.
	for name, named := range map[string]func(string) bool{
		"none": func(string) bool { return false },
		"all":  func(w string) bool { return w == "economy" || w == "business" },
	} {
		if got := pricedOptions(recs, named); got != "" {
			t.Errorf("%s named: %q", name, got)
		}
	}
	// A plain list is no options list.
	if got := pricedOptions(parseRecords("["+a+", "+x+"]", ""), economy); got != "" {
		t.Errorf("a plain list: %q", got)
	}
}

// A reservation that ends where it starts (origin EWR, destination EWR)
// is told by the stops of its legs, which "EWR-EWR" does not say
// (tau-bench-1, a doubtful line of two reviews).
func TestLoopStops(t *testing.T) {
	leg := func(num, from, to string) string {
		return fmt.Sprintf(`{"origin": %q, "destination": %q, "flight_number": %q, "date": "2024-05-28"}`, from, to, num)
	}
	res := func(from, to string, legs ...string) record {
		return parseRecords(fmt.Sprintf(`{"reservation_id": "Z7GOZK", "origin": %q, "destination": %q, "flights": [%s]}`, from, to, strings.Join(legs, ", ")), "")[0]
	}
	if got := res("EWR", "EWR", leg("HAT188", "EWR", "IAH"), leg("HAT207", "IAH", "EWR")).loop; got != "EWR-IAH-EWR" {
		t.Errorf("a loop: %q", got)
	}
	for _, r := range []record{
		res("EWR", "IAH", leg("HAT188", "EWR", "ORD"), leg("HAT207", "ORD", "IAH")), // not a loop: its ends say it
		res("EWR", "EWR", leg("HAT188", "EWR", "IAH"), leg("HAT207", "DFW", "EWR")), // legs that do not chain
		res("EWR", "EWR", leg("HAT188", "EWR", "IAH"), leg("HAT207", "IAH", "ORD")), // legs that end elsewhere
	} {
		if r.loop != "" {
			t.Errorf("%+v: loop %q", r.fields, r.loop)
		}
	}
	tb := newTable(nil, []string{"origin", "destination", "flights"})
	r := res("EWR", "EWR", leg("HAT188", "EWR", "IAH"), leg("HAT207", "IAH", "EWR"))
	if got := tb.cells(&r, false); got[0] != "EWR-IAH-EWR" {
		t.Errorf("the table cell: %q", got)
	}
	if got := loopFields(slices.Clone(r.fields), r.loop); len(got) != len(r.fields)-1 || got[0] != (field{name: "route", value: "EWR-IAH-EWR"}) {
		t.Errorf("the record's own line: %+v", got)
	}
	// Only a trip's two ends: a record's other pair that loops (from and
	// to of a mail thread, or beside a trip's own ends) is not its route.
	for _, body := range []string{
		`{"reservation_id": "R1", "origin": "JFK", "destination": "LAX", "from": "A", "to": "A", "legs": [{"from": "A", "to": "B"}, {"from": "B", "to": "A"}]}`,
		`{"id": "M1", "from": "ann@x.com", "to": "ann@x.com", "thread": [{"from": "ann@x.com", "to": "bob@x.com"}, {"from": "bob@x.com", "to": "ann@x.com"}]}`,
	} {
		if r := parseRecords(body, "")[0]; r.loop != "" {
			t.Errorf("%s: loop %q", body, r.loop)
		}
	}
	// Two pairs joined: each loses its own second column.
	if tb := newTable(nil, []string{"origin", "destination", "from", "to", "legs"}); !slices.Equal(tb.cols, []string{"origin", "from", "legs"}) {
		t.Errorf("two joined pairs: columns %q", tb.cols)
	}
}

func TestRecordsDigest(t *testing.T) {
	recs := parseRecords(`[{"flight_number": "HAT052", "origin": "ATL", "destination": "LAS", "scheduled_departure_time_est": "03:00:00", "status": "available", "prices": {"economy": 125, "business": 328}}, {"flight_number": "HAT102", "origin": "ATL", "destination": "LAS", "scheduled_departure_time_est": "21:00:00", "status": "available", "prices": {"economy": 117, "business": 296}}]`, "")
	want := "(columns: scheduled_departure_time_est; prices (economy, business)): HAT052 03:00, 125/328 | HAT102 21:00, 117/296"
	if got := recordsDigest(recs, levelFull, nil); got != want {
		t.Fatalf("recordsDigest = %q, want %q", got, want)
	}
}

func TestIndexLeavesOutNoise(t *testing.T) {
	for _, id := range []string{"want_all", "attr_docs", "1280px", "0.3s", "uVar5", "local_1c", "LAB_004018c7", "/DEBUG/d", "members_option/g", "setup_loader/p", "utf-8", "iso-8859-1", "latin-1",
		"django/db/models/__pycache__/expressions.cpython-36.pyc", "x27name", "x22value", "208s/mpl.rcParams", "10,12d/x", "s/collections.Callable/Callable"} {
		if !plainName(id) {
			t.Errorf("%q would be listed", id)
		}
	}
	for _, id := range []string{"sphinx/ext/autodoc/directive.py", "SyntaxError", "HAT052", "FUN_0040114c", "python3.11", "1271", "sys.stderr", "x264", "django/db/models/query.py"} {
		if plainName(id) {
			t.Errorf("%q would be left out", id)
		}
	}
}

func TestEarlyErrorsAndRetries(t *testing.T) {
	t.Run("a run that gets past a syntax error resolves it", func(t *testing.T) {
		var b spanBuilder
		b.bash("", "python3 repro.py", rc(1, "  File \"base.py\", line 409\nIndentationError: expected an indented block")).
			bash("", "git checkout base.py", rc(0, "")).
			bash("", "python3 repro.py", rc(1, "Traceback (most recent call last):\n  File \"repro.py\", line 3, in <module>\nValueError: bad date"))
		d := write(t, b.msgs, 800)
		mustContain(t, d.Text, "IndentationError: expected an indented block", "resolved [m0007]")
	})
	t.Run("a tool error in the user role says the retry worked", func(t *testing.T) {
		var b spanBuilder
		b.user("Parameter 'command' is expected to be one of ['view', 'create'].").
			step("", "str_replace_editor", `{"command": "view", "path": "/w/a.py"}`, "Here's the result of running `cat -n` on /w/a.py:\n     1\tx = 1\n")
		d := write(t, b.msgs, 800)
		mustContain(t, d.Text, "Parameter 'command' is expected to be one of", "the next call [m0004] worked")
	})
	t.Run("a sed print by pattern reads a part", func(t *testing.T) {
		c := classifyCall("bash", `{"command": "sed -n '/def add_autodocumenter/,/return/p' sphinx/application.py"}`)
		if len(c.ops) != 1 || c.ops[0].op != kindView || !strings.HasPrefix(c.ops[0].what, "the part ") {
			t.Fatalf("ops %+v", c.ops)
		}
	})
}

func TestUnrelatedFailureIsNotTheNextStep(t *testing.T) {
	var b spanBuilder
	b.bash("", "python -m pytest test_requests.py", rc(1, "test_requests.py:362: in test_conflicting_post_params\nE   TypeError: object (type: <class 'str'>) must be callable\n===== 1 failed, 120 passed in 9.1s =====")).
		say("That failure is unrelated to my change: the test passes a string to pytest.raises. I will revert my fix and run the tests again to confirm.")
	d := write(t, b.msgs, 900)
	mustContain(t, d.Text, "judged it unrelated to its change")
	mustNotContain(t, d.Text, "NEXT: resolve")
}

func TestCompoundLines(t *testing.T) {
	t.Run("a write stands when the run after it fails", func(t *testing.T) {
		var b spanBuilder
		b.bash("", "cat <<'EOF' > repro.py\nimport sys\nsys.exit(1)\nEOF\npython repro.py", rc(1, "Traceback (most recent call last):\nValueError: x"))
		d := write(t, b.msgs, 800)
		mustContain(t, d.Text, "repro.py: created [m0003]")
	})
	t.Run("removing what is not there is no error", func(t *testing.T) {
		var b spanBuilder
		b.bash("", "rm /tmp/debug.log && sphinx-build -b html src out", rc(1, "rm: cannot remove '/tmp/debug.log': No such file or directory"))
		d := write(t, b.msgs, 800)
		mustNotContain(t, d.Text, "ERRORS:")
	})
	t.Run("a label line is not a conclusion's reason", func(t *testing.T) {
		var b spanBuilder
		b.bash("`django/db/backends/base/operations.py`:\nSo for MySQL, the fix is straightforward because `_convert_field_to_tz` hardcodes UTC.", "grep -n tz django/db/backends/mysql/operations.py", rc(0, "73: def _convert_field_to_tz(self, field_name, tzname):"))
		d := write(t, b.msgs, 800)
		mustNotContain(t, d.Text, "operations.py`: So for MySQL")
	})
}

func TestOneFileSearch(t *testing.T) {
	var b spanBuilder
	b.bash("", `grep -r "update_content" sphinx/ext/autodoc/__init__.py`, rc(0, "        super().update_content(more_content)\n        self.update_content(more_content)"))
	d := write(t, b.msgs, 700)
	mustContain(t, d.Text, "super().update_content(more_content)")
	mustNotContain(t, d.Text, "in 2+ files")
}

// A search's hits are counted in the files they are in, all of them (not
// those of the first hits kept: "118 hits in 21+ files" were in 59), as
// lower bounds only where the output was elided; a find's are paths.
func TestSearchCountsFiles(t *testing.T) {
	var out, big, cut []string
	for i := range 60 {
		out = append(out, fmt.Sprintf("sphinx/locale/l%02d/sphinx.po:msgid \"alias of %%s\"", i%50))
	}
	for i := range 65 {
		f := "src/big.py"
		if i >= 45 {
			f = fmt.Sprintf("src/m%02d.py", i)
		}
		big = append(big, fmt.Sprintf("%s:%d: use(x)", f, i))
	}
	for i := range 61 {
		cut = append(cut, fmt.Sprintf("lib/f%02d.py:x = %d", i%60, i))
		if i == 30 {
			cut = append(cut, "[… 52000 characters elided …]")
		}
	}
	got := func(lines []string, level int) string {
		s := &step{f: &stepFacts{call: call{kind: kindSearch}, out: output{lines: lines}}}
		return searchText(s, level)
	}
	if g := got(big, levelShort); !strings.HasPrefix(g, "65 hits in 21 files: src/big.py, src/m45.py") {
		t.Errorf("hits of one file first, then of twenty others: %q", g)
	}
	if g := got(cut, levelShort); !strings.HasPrefix(g, "61+ hits in 60+ files: ") {
		t.Errorf("an elided output: %q", g)
	}
	if g := got(out, levelMin); !strings.HasSuffix(g, "sphinx/locale/l02/sphinx.po +47 more") {
		t.Errorf("least detail: %q", g)
	}
	var b spanBuilder
	b.bash("", `grep -r "alias of" sphinx`, rc(0, strings.Join(out, "\n"))).
		bash("", "find django/db/backends -name operations.py", rc(0, "django/db/backends/sqlite3/operations.py\ndjango/db/backends/postgresql/operations.py\ndjango/db/backends/mysql/operations.py\ndjango/db/backends/base/operations.py\ndjango/db/backends/oracle/operations.py"))
	d := write(t, b.msgs, 900)
	mustContain(t, d.Text, "60 hits in 50 files")
	mustContain(t, d.Text, "find django/db/backends -name operations.py → 5 paths: django/db/backends/sqlite3/operations.py")
	mustNotContain(t, d.Text, "+ files")
}

// A few hits in several files are told with their text, by file: the
// files' names alone said nothing of what each use does.
func TestFewHitsByFile(t *testing.T) {
	var b spanBuilder
	b.bash("", `grep -r "DateFormatter" lib/matplotlib | grep "tex"`, rc(0, "grep: lib/matplotlib/__pycache__/dates.cpython-38.pyc: binary file matches\n"+
		"lib/matplotlib/dates.py:            self._formatter = DateFormatter(fmt, self._tz, usetex=self._usetex)\n"+
		"lib/matplotlib/dates.py:        self._usetex = (usetex if usetex is not None else mpl.rcParams['text.usetex'])\n"+
		"lib/matplotlib/tests/test_dates.py:    formatter = mdates.AutoDateFormatter(locator, usetex=True)\n"+
		"lib/matplotlib/tests/test_dates.py:    formatter = mdates.ConciseDateFormatter(locator, usetex=True)"))
	d := write(t, b.msgs, 900)
	mustContain(t, d.Text, "→ 4 hits: lib/matplotlib/dates.py: self._formatter = DateFormatter(fmt, self._tz, usetex=self._usetex) | self._usetex = "+
		"(usetex if usetex is not None else mpl.rcParams['text.usetex']); lib/matplotlib/tests/test_dates.py: formatter = mdates.AutoDateFormatter(locator, usetex=True) | ")
}

// A harness reminder quoted by an earlier briefing, in its own section or
// (older briefings) among the user's lines, is quoted once when it comes
// again.
func TestHarnessFoldedOnce(t *testing.T) {
	count := counter(t)
	const reminder = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
	older := "Covers m0003–m0005 (3 messages, 0 tool calls); [mNNNN] = source message.\nUSER (verbatim, oldest first):\n[m0004] harness reminder, not from the user: " + reminder + "\nSTATE:\n- nothing edited yet (no file changed)"
	var b spanBuilder
	b.say("Two actions.").user(reminder)
	first := write(t, b.msgs, 600)
	for name, prevText := range map[string]string{"own section": first.Text, "older format": older} {
		prev := &briefd.Briefing{BoundaryID: "m0010", Text: prevText}
		var c spanBuilder
		c.n = 10
		c.say("Two actions again.").user(reminder)
		span := append([]briefd.Message{briefd.BriefingMessage(prev)}, c.msgs...)
		d, err := Write(context.Background(), Input{Span: span, BudgetTokens: 600, CountTokens: count})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(d.Text, reminder); n != 1 {
			t.Errorf("%s: the reminder is quoted %d times:\n%s", name, n, d.Text)
		}
		if !strings.Contains(d.Text, "HARNESS (not the user):\n[") || strings.Contains(d.Text, "harness reminder, not from the user") {
			t.Errorf("%s: the reminder is not in its own section:\n%s", name, d.Text)
		}
	}
}

// A user message that goes on to repeat a pinned message (SWE-agent's
// standing instructions after the task, which its demonstration also holds)
// is quoted up to the repeat.
func TestUserRepeatOfHeadNotQuotedAgain(t *testing.T) {
	instructions := "INSTRUCTIONS:\nNow, you're going to solve this issue on your own. " + strings.Repeat("Remember, YOU CAN ONLY ENTER ONE COMMAND AT A TIME. ", 12)
	head := []briefd.Message{
		{ID: "m0001", Role: briefd.RoleSystem, Content: briefd.Text("You are an autonomous programmer.")},
		{ID: "m0002", Role: briefd.RoleUser, Content: briefd.Text("Here is a demonstration.\n" + instructions + "\n--- END OF DEMONSTRATION ---")},
	}
	task := "We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\nPixel Representation attribute should be optional for pixel data handler.\n\n"
	var b spanBuilder
	b.user(task+instructions+"\n(Open file: n/a)\n(Current directory: /pydicom__pydicom)\nbash-$").
		bash("Reproduce.", "python reproduce_bug.py", rc(1, "AttributeError: PixelRepresentation"))
	d, err := Write(context.Background(), Input{Head: head, Span: b.msgs, BudgetTokens: 800, CountTokens: counter(t)})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, d.Text, "Pixel Representation attribute should be optional for pixel data handler. […the rest repeats the pinned message m0002 word for word]")
	if strings.Contains(d.Text, "ONE COMMAND AT A TIME") {
		t.Errorf("the instructions are quoted again:\n%s", d.Text)
	}
}

// A long reasoning in one message is quoted by its three weightiest
// sentences, not sentence by sentence.
func TestNotesOfOneMessageCapped(t *testing.T) {
	var b spanBuilder
	b.bash("Look.", "cat django/template/autoreload.py", rc(0, "def template_changed(sender, file_path, **kwargs):\n    return True")).
		say("The root cause is that `template_changed` returns `True` for `cwd`. " +
			"So `template_changed` must be returning `True` for `views.py`. " +
			"Which means `file_path.suffix` is not `.py` in `StatReloader`. " +
			"I should change `get_template_directories` because `DIRS` holds ''. " +
			"The fix is to filter empty strings in `django/template/autoreload.py`.")
	d := write(t, b.msgs, 2000)
	_, notes, _ := strings.Cut(d.Text, "SAID BY THE AGENT:\n")
	notes, _, _ = strings.Cut(notes, "\nNEXT:")
	if n := strings.Count(notes, "- [m0005] "); n != 3 {
		t.Errorf("%d sentences of m0005 quoted, want 3:\n%s", n, d.Text)
	}
}

// Where the options offered do not fit with their details, their labels
// and the codes their details name do.
func TestTellListLabelsWithCodes(t *testing.T) {
	text := "1. **Flight Option 1:**\n   - **First Leg:** Flight Number: HAT084, Departure: 04:00 AM\n   - **Second Leg:** Flight Number: HAT266, Departure: 01:00 PM\n2. **Flight Option 2:**\n   - **First Leg:** Flight Number: HAT229, Departure: 11:00 AM\n   - **Second Leg:** Flight Number: HAT266, Departure: 01:00 PM\n3. **Flight Option 3:**\n   - **First Leg:** Flight Number: HAT290, Departure: 02:00 PM\n   - **Second Leg:** Flight Number: HAT175, Departure: 05:00 PM"
	got := tellList(strings.Split(plainText(text), "\n"), 120)
	want := "1. Flight Option 1 (HAT084, HAT266); 2. Flight Option 2 (HAT229, HAT266); 3. Flight Option 3 (HAT290, HAT175)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Of two options only one fits with its details: both are told by their
// labels and codes, since the answer may pick the other.
func TestTellListHalfTold(t *testing.T) {
	text := "1. **Outgoing Flight (IAH to SFO on 2024-05-19):**\n   - **Flight HAT072:** Departs at 09:00 EST, arrives at 13:00 EST, Business price: $282\n\n2. **Return Flight (SFO to IAH on 2024-05-23):**\n   - **Flight HAT278:** Departs at 16:00 EST, arrives at 20:00 EST, Business price: $443"
	got := tellList(strings.Split(plainText(text), "\n"), 136)
	want := "1. Outgoing Flight (IAH to SFO on 2024-05-19) (HAT072); 2. Return Flight (SFO to IAH on 2024-05-23) (HAT278)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestDropSmallCuts(t *testing.T) {
	// mini-swe-agent-36's changed file: its least level cut the replacement.
	full := "- sphinx/ext/autodoc/__init__.py: 9 changes [m0033–m0069] undone by [m0075]; every `'private-members': bool_option` → `'private-members': members_option` [m0077]; rewritten by running update_autodoc.py [m0081]"
	cut := "- sphinx/ext/autodoc/__init__.py: 9 changes [m0033–m0069] undone by [m0075]; every `'private-members': bool_option` →… [m0077]; rewritten by running update_autodoc.py…"
	it := &item{}
	it.texts = [levels]string{full, full, cut}
	it.dropSmallCuts()
	if it.texts[levelMin] != full {
		t.Errorf("a cut of 40 bytes of %d was kept: %q", len(full), it.texts[levelMin])
	}
	long := strings.Repeat("x", 400)
	it.texts = [levels]string{long, long[:300] + "…", long[:100] + "…"}
	it.dropSmallCuts()
	if it.texts[1] == long || it.texts[2] == long {
		t.Errorf("a cut worth its bytes was dropped: %d, %d bytes", len(it.texts[1]), len(it.texts[2]))
	}
}

func TestClipChangeKeepsTheNewText(t *testing.T) {
	for _, tc := range []struct {
		body string
		max  int
		want string
	}{
		// mini-swe-agent-20's fix of its reproduction script, at the least level.
		{"`ax.plot(dates, data)` → `ax.plot(dates.to_numpy(), data)`", 50, "`…dates, data)` → `…dates.to_numpy(), data)`"},
		// mini-swe-agent-36: with its context cut, "every" would count every bool_option.
		{"every `'private-members': bool_option` → `'private-members': members_option`", 50, "`…bool_option` → `…members_option`"},
		{"every `'private-members': bool_option` → `'private-members': members_option`", 90, "every `'private-members': bool_option` → `'private-members': members_option`"},
		// mini-swe-agent-41's fix: both texts were cut before the difference.
		{"`argtype, argname = fieldarg.split(None, 1)` → `argtype, argname = fieldarg.rsplit(None, 1)`", 50, "`…split(None, 1)` → `…rsplit(None, 1)`"},
		{"`self.x = compute(a, b, c, d, e, f, g)` → `self.x = compute(a, b, c, d, e, f, g, h)`", 40, "`…g)` → `…g, h)`"},
		// A pure addition says what was added.
		{"`import collections` → `import collections ⏎ try: ⏎ from collections.abc import Callable ⏎ except ImportError:`", 70, "added `try: ⏎ from collections.abc import…` after `import…`"},
		// The words before the quotes stay whole.
		{"every `collections.MutableMapping` → `MutableMapping`", 50, "every `collections.MutableMa…` → `MutableMapping`"},
		{"`strict=self.strict)` → ``", 50, "removed `strict=self.strict)`"},
		// Nothing shared: the new text first.
		{"`" + strings.Repeat("a", 60) + "` → `" + strings.Repeat("b", 30) + "`", 50, "`" + strings.Repeat("a", 11) + "…` → `" + strings.Repeat("b", 30) + "`"},
		{"`a` → `b`", 50, "`a` → `b`"},
		{"`" + strings.Repeat("x", 80) + "` → `short`", 50, "`" + strings.Repeat("x", 36) + "…` → `short`"},
		// A range that may run to the file's end keeps saying so, its patterns cut.
		{"deleted from each line matching `if call.when == \"call\":` through the next matching `item._store\\[xfailed_key\\] =` (or the file's end)", 80,
			"deleted from each line matching `if call.when == \"call\":`… (or the file's end)"},
		// mini-swe-agent-18's fix: the inserted line was cut away, the anchor kept.
		{"inserted after each line matching `self.get_models.cache_clear()`: `self.get_swappable_settings_name.cache_clear()`", 80,
			"inserted after `self.get_mode…`: `self.get_swappable_settings_name.cache_clear()`"},
		{"inserted after line 317: `if(ast_id(pattern_type) == TK_ISO){pattern_type = x;}` (+2 lines)", 60, "inserted after line 317: `if(ast_id(pattern_typ…` (+2 lines)"},
		{"inserted after line 317: `if(x){y}`", 20, "inserted after line…"},
	} {
		if got := clipChange(tc.body, tc.max); got != tc.want {
			t.Errorf("clipChange(%q, %d) = %q, want %q", tc.body, tc.max, got, tc.want)
		}
	}
}

func TestThoughtKeepsItsConclusion(t *testing.T) {
	// tau-bench-7's think at m0021.
	th := "The original flight from ATL to DFW (HAT252) departs at 01:00 EST. The user prefers a new flight to LAS within 3-4 hours of this time. The available flights to LAS are HAT052 (03:00 EST), HAT102 (21:00 EST), HAT174 (01:00 EST), HAT178 (08:00 EST), and HAT281 (22:00 EST). The flight HAT052 at 03:00 EST is within the preferred time range."
	for _, tc := range []struct {
		max  int
		want string
	}{
		{180, "The original flight from ATL to DFW (HAT252) departs at 01:00 EST. … The flight HAT052 at 03:00 EST is within the preferred time range."},
		{100, "The original flight from ATL… The flight HAT052 at 03:00 EST is within the preferred time range."},
		{400, th},
	} {
		if got := thoughtText(th, tc.max); got != tc.want {
			t.Errorf("thoughtText(%d) = %q, want %q", tc.max, got, tc.want)
		}
	}
}

func TestQuotesHeadCurlyQuote(t *testing.T) {
	issue := "Autoreload breaks. This happens because django/template/autoreload.py::template_changed was previously comparing the empty string."
	m := &model{head: []briefd.Message{{ID: "m0002", Role: briefd.RoleUser, Content: briefd.Text(issue)}}}
	if !m.quotesHead("The PR says “This happens because django/template/autoreload.py::template_changed was previously comparing”.") {
		t.Fatal("a quote in curly marks of the pinned issue was not seen as the issue's words")
	}
	if m.quotesHead("“This happens only when the loader caches templates across requests and the cache key is stale”.") {
		t.Fatal("a sentence the issue does not hold was taken for a quote of it")
	}
}
