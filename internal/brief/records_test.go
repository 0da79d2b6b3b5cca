package brief

import (
	"fmt"
	"strings"
	"testing"
)

func recordLine(t *testing.T, text, id string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "- "+id+" [") {
			return l
		}
	}
	t.Fatalf("no record line of %s:\n%s", id, text)
	return ""
}

// A trip of its own shape that a call changed says so, as any record's
// line does.
func TestTripRowKeepsStatus(t *testing.T) {
	var b spanBuilder
	b.user("My reservation is XEWRD9. Please cancel it.").
		step("", "get_reservation_details", `{"reservation_id": "XEWRD9"}`, `{"reservation_id": "XEWRD9", "user_id": "james_lee_6136", "origin": "LAX", "destination": "ATL", "flight_type": "one_way", "cabin": "economy", "flights": [{"origin": "LAX", "destination": "ATL", "flight_number": "HAT030", "date": "2024-05-13", "price": 92}], "insurance": "yes"}`).
		step("", "cancel_reservation", `{"reservation_id": "XEWRD9"}`, `Reservation XEWRD9 cancelled`)
	d := write(t, b.msgs, 900)
	mustContain(t, recordLine(t, d.Text, "XEWRD9"), "(Reservation XEWRD9 cancelled)")
}

// A record whose from and to are dates or addresses is no trip: its
// fields keep their names.
func TestTripRowOnlyForTrips(t *testing.T) {
	for _, c := range []struct{ tool, args, res, want string }{
		{"get_booking", `{"booking_id": "BK12345"}`, `{"booking_id": "BK12345", "guest": "Ann Lee", "room": "deluxe", "from": "2024-05-01", "to": "2024-05-03", "price": 420}`, "from 2024-05-01; to 2024-05-03"},
		{"get_email", `{"email_id": "EM20931"}`, `{"email_id": "EM20931", "from": "ann@corp.com", "to": "bob@corp.com", "subject": "Refund request", "status": "unread"}`, "from ann@corp.com; to bob@corp.com"},
	} {
		var b spanBuilder
		b.user("Please look up "+c.args).step("", c.tool, c.args, c.res)
		d := write(t, b.msgs, 900)
		id := strings.Split(strings.Split(c.args, `": "`)[1], `"`)[0]
		mustContain(t, recordLine(t, d.Text, id), c.want)
	}
}

// At full detail a trip of its own shape tells every leg's route and
// price, as a line does, not a table row's cut.
func TestTripRowFullKeepsPrices(t *testing.T) {
	var legs []string
	stops := []string{"LAX", "ORD", "ATL", "DFW", "DEN", "SEA", "LAX"}
	for i := 0; i+1 < len(stops); i++ {
		legs = append(legs, fmt.Sprintf(`{"origin": "%s", "destination": "%s", "flight_number": "HAT%03d", "date": "2024-05-%02d", "price": %d}`, stops[i], stops[i+1], 30+i, 13+i, 60+i))
	}
	var b spanBuilder
	b.user("My reservation is XEWRD9. What did each flight cost?").
		step("", "get_reservation_details", `{"reservation_id": "XEWRD9"}`, `{"reservation_id": "XEWRD9", "user_id": "james_lee_6136", "origin": "LAX", "destination": "LAX", "flight_type": "one_way", "cabin": "economy", "flights": [`+strings.Join(legs, ", ")+`], "insurance": "yes"}`)
	d := write(t, b.msgs, 3000)
	mustContain(t, recordLine(t, d.Text, "XEWRD9"), "HAT030 LAX-ORD 2024-05-13 60", "HAT035 SEA-LAX 2024-05-18 65")
}

// A free-text cell that names an id in passing is no list of ids: it is
// not reduced to that id, nor to a stray ")".
func TestTripRowTextCell(t *testing.T) {
	var b spanBuilder
	b.user("Please look up shipment SHP12345.").
		step("", "get_shipment", `{"shipment_id": "SHP12345"}`, `{"shipment_id": "SHP12345", "origin": "Chicago", "destination": "Denver", "status": "damaged", "notes": "Box 2 of 3 (ref TRK9981234) arrived crushed; carrier will call the customer about a claim within five days"}`)
	for i := 0; i < 12; i++ {
		b.step("", "get_order", fmt.Sprintf(`{"order_id": "ORD%05d"}`, i), fmt.Sprintf(`{"order_id": "ORD%05d", "item": "lamp model %d with a shade", "price": %d, "state": "delivered to the front porch"}`, i, i, 10+i))
	}
	d := write(t, b.msgs, 300)
	mustNotContain(t, recordLine(t, d.Text, "SHP12345"), "TRK9981234)")
}

// A line that points at the state's quote of the last check reads as
// written when the pointer is resolved, in the record and in a text fold:
// a step's "then:" line without the quote's "…" between the two, an
// ERRORS line with the quote's cut where the rest of the output was cut.
func TestResolvedPointersRead(t *testing.T) {
	for _, c := range []struct {
		out, bad string
		sec      section
	}{
		{"reproduce_app.CustomUser: (auth.E003) 'CustomUser.username' must be unique because it is named as the 'USERNAME_FIELD'.\nReproduced auth.E003",
			"…, then:", secSteps},
		{"FAILED: bins not monotonic\nedges of feature 0: [0.0, 0.75, 2.5, 1.2, 6.0, 10.0] computed by kmeans from centers [0.2, 1.3, 3.7, 0.9, 9.5]\nedges of feature 1: [0.0, 0.25, 3.5, 2.2, 7.0, 10.0]",
			"[0.2, [m0005]", secErrors},
	} {
		var b spanBuilder
		b.bash("Fix it.", "sed -i 's/a/b/' pixels.py", rc(0, "")).bash("Check.", "python repro.py", rc(1, c.out))
		d := write(t, b.msgs, 900)
		mustNotContain(t, string(d.Structured), c.bad)
		p := parseText(d.Text)
		p.resolveInState()
		for _, e := range p.entries[c.sec] {
			mustNotContain(t, e.Text, c.bad)
		}
	}
}

// A recursive listing whose first names come before any header (ls -R
// FILE DIR) labels every directory; a directory with a space in its name
// is a header too.
func TestTreeGroupsHeaders(t *testing.T) {
	for _, c := range []struct{ out, bad string }{
		{"README.md\nsetup.py\n\nsrc:\na.py\nb.py\n\ntests:\nt.py\n", "| : a.py"},
		{".:\ndocs\nmy dir\nsrc\n\n./docs:\na.md\n\n./my dir:\nnotes.txt\n\n./src:\nmain.py\n", "docs: a.md ./my dir: notes.txt"},
	} {
		o := readOutput(c.out, false, true)
		mustNotContain(t, listText(&o, levelFull), c.bad)
	}
}
