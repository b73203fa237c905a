package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressMeter: without a terminal, one line per interval with rows, percent, rate and
// ETA; on a terminal, a bar redrawn in place; the final figures end with a newline.
func TestProgressMeter(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var lines bytes.Buffer
	p := &Meter{W: &lines, Label: "import", Unit: "rows", Interval: 5 * time.Second, Now: clock, Total: 1000}
	p.Update(0, 0)
	now = now.Add(time.Second)
	p.Update(100, 100) // within the interval: nothing
	now = now.Add(9 * time.Second)
	p.Update(250, 250)
	if got, want := lines.String(), "import: 250 rows  25%, 25 rows/s, ETA 30s\n"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	var term bytes.Buffer
	p = &Meter{W: &term, Label: "import", Unit: "rows", Terminal: true, Now: clock, Total: 1000}
	p.Update(0, 0)
	now = now.Add(time.Second)
	p.Update(500, 500)
	p.Done(1000, 1000)
	out := term.String()
	if !strings.HasPrefix(out, "\r\x1b[Kimport: 500 rows [===============               ]  50%, 500 rows/s, ETA 1s") || !strings.HasSuffix(out, "100%, 1000 rows/s\n") {
		t.Fatalf("terminal output %q", out)
	}
}
