package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// GradesFile is what graders fill in: [WritePackets] writes a template
// (grades.json) with one Grade per conversation and method, every verdict
// and score empty. Several graders may grade the same packet: each adds
// its own Grade with its name.
type GradesFile struct {
	Protocol string  `json:"protocol,omitempty"`
	Grades   []Grade `json:"grades"`
}

// Grade is one grader's verdicts on one packet.
type Grade struct {
	Conversation string `json:"conversation"`
	// Method is briefd or middle.
	Method string `json:"method"`
	Packet string `json:"packet,omitempty"`
	Grader string `json:"grader"`
	// Probes are the verdicts, one per probe.
	Probes []ProbeVerdict `json:"probes"`
	// Dimensions holds the 0-5 scores by key (GradeDimensions); null
	// until graded.
	Dimensions map[string]*float64 `json:"dimensions"`
	Notes      string              `json:"notes,omitempty"`
}

// ProbeVerdict is a grader's verdict on a reader's answer to one probe.
type ProbeVerdict struct {
	ID string `json:"id"`
	// Location is where the probe's sources are (span, mixed, kept); it is
	// copied from the manifest so that the grades stand alone.
	Location string `json:"location"`
	// Verdict is usable, bare or missing; empty until graded.
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// Verdicts a grader gives an answer (docs/probes.md).
const (
	VerdictUsable  = "usable"  // the fact is there and correct enough to act on
	VerdictBare    = "bare"    // only a name or code, without the fact asked for
	VerdictMissing = "missing" // absent or wrong
)

// GradeDimensions are the 0-5 dimensions of a hand-off, in report order:
// the questionnaire's eight, then readability.
var GradeDimensions = []string{"task", "user_instructions", "artifacts", "commands_results", "errors", "decisions", "state", "next_step", "readability"}

func templateGrade(pm *PacketManifest, method string) Grade {
	g := Grade{Conversation: pm.Conversation, Method: method, Packet: pm.Packets[method], Dimensions: map[string]*float64{}}
	for _, p := range pm.Probes {
		g.Probes = append(g.Probes, ProbeVerdict{ID: p.ID, Location: p.Location})
	}
	for _, d := range GradeDimensions {
		g.Dimensions[d] = nil
	}
	return g
}

// Tally counts verdicts.
type Tally struct {
	Usable   int `json:"usable"`
	Bare     int `json:"bare"`
	Missing  int `json:"missing"`
	Ungraded int `json:"ungraded"`
}

// Graded is the number of graded verdicts.
func (t Tally) Graded() int { return t.Usable + t.Bare + t.Missing }

func (t *Tally) add(verdict string) {
	switch verdict {
	case VerdictUsable:
		t.Usable++
	case VerdictBare:
		t.Bare++
	case VerdictMissing:
		t.Missing++
	default:
		t.Ungraded++
	}
}

func (t *Tally) plus(o Tally) {
	t.Usable += o.Usable
	t.Bare += o.Bare
	t.Missing += o.Missing
	t.Ungraded += o.Ungraded
}

// MethodGrades aggregates one method's grades.
type MethodGrades struct {
	// Probes tallies the verdicts by location (span, mixed, kept).
	Probes map[string]Tally `json:"probes"`
	// Dimensions holds each dimension's mean over the graded packets.
	Dimensions map[string]Stat `json:"dimensions"`
	// Conversations tallies the verdicts of the probes that need the
	// compacted span (span and mixed), per conversation.
	Conversations map[string]Tally `json:"conversations"`
}

// NeedSpan tallies the probes whose answer needs the compacted span:
// locations span and mixed.
func (m MethodGrades) NeedSpan() Tally {
	t := m.Probes[LocationSpan]
	t.plus(m.Probes[LocationMixed])
	return t
}

// Aggregate is the graders' verdicts summed up, per method.
type Aggregate struct {
	Graders []string                `json:"graders"`
	Methods map[string]MethodGrades `json:"methods"`
}

// AggregateFile reads a grades file and aggregates it.
func AggregateFile(path string) (*Aggregate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var gf GradesFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&gf); err != nil {
		return nil, fmt.Errorf("eval: grades file %s: %w", path, err)
	}
	agg, err := AggregateGrades(gf)
	if err != nil {
		return nil, fmt.Errorf("eval: grades file %s: %w", path, err)
	}
	return agg, nil
}

// AggregateGrades checks every grade and sums them up: verdict counts per
// method and location, and the mean of each dimension per method. An
// empty verdict or a null score is ungraded, not an error; anything else
// not in the protocol is.
func AggregateGrades(gf GradesFile) (*Aggregate, error) {
	agg := &Aggregate{Graders: []string{}, Methods: map[string]MethodGrades{}}
	dims := map[string]map[string][]float64{}
	seen := map[string]bool{}
	graders := map[string]bool{}
	for i, g := range gf.Grades {
		where := fmt.Sprintf("grade %d (%s, %s, grader %q)", i+1, g.Conversation, g.Method, g.Grader)
		if g.Conversation == "" {
			return nil, fmt.Errorf("grade %d has no conversation", i+1)
		}
		if g.Method != PacketBriefd && g.Method != PacketMiddle {
			return nil, fmt.Errorf("%s: method must be %s or %s", where, PacketBriefd, PacketMiddle)
		}
		key := g.Conversation + "\x00" + g.Method + "\x00" + g.Grader
		if seen[key] {
			return nil, fmt.Errorf("%s: graded twice by the same grader", where)
		}
		seen[key] = true
		if g.Grader != "" {
			graders[g.Grader] = true
		}
		mg, ok := agg.Methods[g.Method]
		if !ok {
			mg = MethodGrades{Probes: map[string]Tally{}, Dimensions: map[string]Stat{}, Conversations: map[string]Tally{}}
			dims[g.Method] = map[string][]float64{}
		}
		probeIDs := map[string]bool{}
		for _, p := range g.Probes {
			if probeIDs[p.ID] {
				return nil, fmt.Errorf("%s: probe %s graded twice", where, p.ID)
			}
			probeIDs[p.ID] = true
			switch p.Verdict {
			case "", VerdictUsable, VerdictBare, VerdictMissing:
			default:
				return nil, fmt.Errorf("%s: probe %s: verdict %q is not usable, bare or missing", where, p.ID, p.Verdict)
			}
			switch p.Location {
			case LocationSpan, LocationMixed, LocationKept:
			default:
				return nil, fmt.Errorf("%s: probe %s: location %q is not span, mixed or kept", where, p.ID, p.Location)
			}
			t := mg.Probes[p.Location]
			t.add(p.Verdict)
			mg.Probes[p.Location] = t
			if p.Location != LocationKept {
				c := mg.Conversations[g.Conversation]
				c.add(p.Verdict)
				mg.Conversations[g.Conversation] = c
			}
		}
		for d, v := range g.Dimensions {
			if !slices.Contains(GradeDimensions, d) {
				return nil, fmt.Errorf("%s: unknown dimension %q (want %s)", where, d, strings.Join(GradeDimensions, ", "))
			}
			if v == nil {
				continue
			}
			if *v < 0 || *v > 5 {
				return nil, fmt.Errorf("%s: %s = %v is not in 0-5", where, d, *v)
			}
			dims[g.Method][d] = append(dims[g.Method][d], *v)
		}
		agg.Methods[g.Method] = mg
	}
	for m, mg := range agg.Methods {
		for _, d := range GradeDimensions {
			mg.Dimensions[d] = stat(dims[m][d])
		}
	}
	for g := range graders {
		agg.Graders = append(agg.Graders, g)
	}
	sort.Strings(agg.Graders)
	return agg, nil
}

func share(n, of int) string {
	if of == 0 {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("%d (%.0f%%)", n, 100*float64(n)/float64(of))
}

// WriteTable prints the verdicts per method and location, the dimensions
// side by side, the verdicts per conversation, and the targets.
func (a *Aggregate) WriteTable(w io.Writer) error {
	methods := []string{PacketBriefd, PacketMiddle}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Probes\tsources\tusable\tbare\tmissing\tungraded\t")
	for _, m := range methods {
		mg, ok := a.Methods[m]
		if !ok {
			continue
		}
		rows := []struct {
			name string
			t    Tally
		}{
			{"compacted", mg.Probes[LocationSpan]}, {"mixed", mg.Probes[LocationMixed]},
			{"= needs the span", mg.NeedSpan()}, {"kept (apart)", mg.Probes[LocationKept]},
		}
		for _, r := range rows {
			g := r.t.Graded()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t\n", m, r.name, share(r.t.Usable, g), share(r.t.Bare, g), share(r.t.Missing, g), r.t.Ungraded)
		}
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t")
	fmt.Fprintln(tw, "Dimension (0-5)\tbriefd\tmiddle\t\t\t\t")
	for _, d := range GradeDimensions {
		cells := []string{d}
		for _, m := range methods {
			s := a.Methods[m].Dimensions[d]
			if s.N == 0 {
				cells = append(cells, "-")
			} else {
				cells = append(cells, fmt.Sprintf("%.2f (n=%d)", s.Mean, s.N))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	convs := map[string]bool{}
	for _, m := range methods {
		for c := range a.Methods[m].Conversations {
			convs[c] = true
		}
	}
	names := make([]string, 0, len(convs))
	for c := range convs {
		names = append(names, c)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "\nProbes needing the span, per conversation (usable/bare/missing):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "conversation\tbriefd\tmiddle\t")
	for _, c := range names {
		cells := []string{c}
		for _, m := range methods {
			t := a.Methods[m].Conversations[c]
			cells = append(cells, fmt.Sprintf("%d/%d/%d", t.Usable, t.Bare, t.Missing))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b, mid := a.Methods[PacketBriefd], a.Methods[PacketMiddle]
	need := b.NeedSpan()
	fmt.Fprintf(w, "\nTargets (issue 8), graders: %s\n", strings.Join(a.Graders, ", "))
	if g := need.Graded(); g > 0 {
		fmt.Fprintf(w, "  usable as given        %.1f%% of %d  (>= 85%%)\n", 100*float64(need.Usable)/float64(g), g)
	}
	low, beaten := []string{}, []string{}
	for _, d := range GradeDimensions {
		s, o := b.Dimensions[d], mid.Dimensions[d]
		if s.N == 0 {
			continue
		}
		floor := 4.5
		if d == "readability" {
			floor = 4
		}
		if s.Mean < floor {
			low = append(low, fmt.Sprintf("%s %.2f", d, s.Mean))
		}
		if o.N > 0 && s.Mean <= o.Mean {
			beaten = append(beaten, fmt.Sprintf("%s %.2f vs %.2f", d, s.Mean, o.Mean))
		}
	}
	fmt.Fprintf(w, "  dimensions below 4.5 (readability 4): %s\n", orNone(low))
	_, err := fmt.Fprintf(w, "  dimensions where briefd does not beat middle truncation: %s\n", orNone(beaten))
	return err
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}
