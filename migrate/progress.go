package migrate

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress prints an import's progress on stderr: rows, rate and ETA, as a bar redrawn in
// place on a terminal, else as a line every Interval. Work is measured in units (rows of a
// pull, bytes of a file) of which Total are expected (0: unknown, no ETA).
type Progress struct {
	W        io.Writer
	Terminal bool
	Interval time.Duration    // between lines when not on a terminal; default 5s
	Now      func() time.Time // default time.Now
	Total    int64

	start, last time.Time
	drawn       bool
}

// Update reports rows done and units of work done.
func (p *Progress) Update(rows int, done int64) {
	if p.Now == nil {
		p.Now = time.Now
	}
	now := p.Now()
	if p.start.IsZero() {
		p.start, p.last = now, now
		return
	}
	every := p.Interval
	if every <= 0 {
		every = 5 * time.Second
	}
	if p.Terminal {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.print(rows, done, now, false)
}

// Done prints the final figures.
func (p *Progress) Done(rows int, done int64) {
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.start.IsZero() {
		p.start = p.Now()
	}
	p.print(rows, done, p.Now(), true)
}

func (p *Progress) print(rows int, done int64, now time.Time, final bool) {
	el := now.Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(rows) / el
	}
	pct, eta := "", ""
	if p.Total > 0 && done > 0 {
		f := min(float64(done)/float64(p.Total), 1)
		pct = fmt.Sprintf(" %3.0f%%", 100*f)
		if !final && f < 1 {
			left := time.Duration(el * (1 - f) / f * float64(time.Second)).Round(time.Second)
			eta = fmt.Sprintf(", ETA %s", left)
		}
		if p.Terminal {
			const width = 30
			n := int(f * width)
			pct = " [" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]" + pct
		}
	}
	line := fmt.Sprintf("import: %d rows%s, %.0f rows/s%s", rows, pct, rate, eta)
	switch {
	case p.Terminal && final:
		fmt.Fprintf(p.W, "\r\x1b[K%s\n", line)
	case p.Terminal:
		fmt.Fprintf(p.W, "\r\x1b[K%s", line)
		p.drawn = true
	default:
		fmt.Fprintln(p.W, line)
	}
}
