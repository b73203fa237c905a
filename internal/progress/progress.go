// Package progress owns the progress line of the commands that run for more than a few
// seconds (pushd import and export, the load test's seeding): a count, its rate and, when the
// total is known, the percentage and ETA. On a terminal it is a bar redrawn in place; else a
// plain line every Interval, fit for a log file. A Meter is not safe for concurrent use: one
// goroutine reports to it.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Meter prints the progress of one piece of work. Work is counted in items (Unit: rows,
// installations) and measured in units of which Total are expected (bytes of a file, buckets
// of an app, or the items themselves; 0: unknown, no percentage nor ETA).
type Meter struct {
	W        io.Writer
	Terminal bool             // redraw one line in place (stderr is a terminal)
	Label    string           // what runs, e.g. "import"
	Unit     string           // what is counted, e.g. "rows"
	Interval time.Duration    // between lines when not on a terminal; default 5s
	Now      func() time.Time // default time.Now
	Total    int64

	start, last time.Time
}

// redraw is how often a terminal's bar is redrawn: smooth to the eye, cheap to write.
const redraw = 200 * time.Millisecond

// Update reports count items and done units of work so far. The first call starts the clock.
func (m *Meter) Update(count, done int64) {
	if m.Now == nil {
		m.Now = time.Now
	}
	now := m.Now()
	if m.start.IsZero() {
		m.start, m.last = now, now
		return
	}
	every := m.Interval
	if every <= 0 {
		every = 5 * time.Second
	}
	if m.Terminal {
		every = redraw
	}
	if now.Sub(m.last) < every {
		return
	}
	m.last = now
	m.print(count, done, now, false)
}

// Done prints the final figures (on a terminal, ending the redrawn line).
func (m *Meter) Done(count, done int64) {
	if m.Now == nil {
		m.Now = time.Now
	}
	if m.start.IsZero() {
		m.start = m.Now()
	}
	m.print(count, done, m.Now(), true)
}

func (m *Meter) print(count, done int64, now time.Time, final bool) {
	el := now.Sub(m.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(count) / el
	}
	pct, eta := "", ""
	if m.Total > 0 && done > 0 {
		f := min(float64(done)/float64(m.Total), 1)
		pct = fmt.Sprintf(" %3.0f%%", 100*f)
		if !final && f < 1 {
			left := time.Duration(el * (1 - f) / f * float64(time.Second)).Round(time.Second)
			eta = fmt.Sprintf(", ETA %s", left)
		}
		if m.Terminal {
			const width = 30
			n := int(f * width)
			pct = " [" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]" + pct
		}
	}
	line := fmt.Sprintf("%s: %d %s%s, %.0f %s/s%s", m.Label, count, m.Unit, pct, rate, m.Unit, eta)
	switch {
	case m.Terminal && final:
		fmt.Fprintf(m.W, "\r\x1b[K%s\n", line)
	case m.Terminal:
		fmt.Fprintf(m.W, "\r\x1b[K%s", line)
	default:
		fmt.Fprintln(m.W, line)
	}
}
