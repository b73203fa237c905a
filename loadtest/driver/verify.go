package driver

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pushd/pushd/push"
)

// RecordCounts is what the push records of one scenario say, summed over its records.
type RecordCounts struct {
	Status    string // "done" when every record is done, else the first other status seen
	Total     push.Tally
	ByChannel map[string]push.Tally
	Errors    []string // record errors and stop reasons
}

// Add sums one record into r.
func (r *RecordCounts) Add(status string, byChannel map[string]push.Tally, errs []string) {
	if r.ByChannel == nil {
		r.ByChannel = map[string]push.Tally{}
	}
	if r.Status == "" || r.Status == push.StatusDone {
		r.Status = status
	}
	for ch, t := range byChannel {
		cur := r.ByChannel[ch]
		cur.Add(t)
		r.ByChannel[ch] = cur
		r.Total.Add(t)
	}
	r.Errors = append(r.Errors, errs...)
}

// SimDelta is what one simulator answered during a scenario (after minus before).
type SimDelta struct {
	Name     string // delivery channel it plays ("apns", "fcm"), "" if unknown
	Accepted int64
	Dead     int64 // answers saying the token is dead (APNs Unregistered, FCM UNREGISTERED)
	PerToken map[string]int64
}

// Dead-token reasons of the simulators (APNs reason, FCM errorCode).
var deadReasons = []string{"Unregistered", "UNREGISTERED"}

// Verify compares a scenario's outcome with its expectation and returns the problems found
// (none: verified). It proves, from the simulators' per-token counts, that every expected
// token was accepted exactly once by the right simulator and no other token was, and that
// the push records count exactly what the simulators saw.
func Verify(e *Expect, rec RecordCounts, sims []SimDelta) []string {
	var p problems
	if rec.Status != push.StatusDone {
		p.addf("push record status is %q, not done", rec.Status)
	}
	named := false
	for _, err := range rec.Errors {
		if e.FailReason != "" && strings.Contains(err, e.FailReason) {
			named = true
			continue
		}
		p.addf("push record reports: %s", err)
	}
	if len(e.Failed) > 0 && e.FailReason != "" && !named {
		p.addf("no push record error names %q, the reason the failed targets must give", e.FailReason)
	}

	// Per token, from the simulators.
	got := map[string]int64{}
	var wrongSim []string
	var accepted, dead int64
	for _, s := range sims {
		accepted += s.Accepted
		dead += s.Dead
		for tok, n := range s.PerToken {
			if n == 0 {
				continue
			}
			got[tok] += n
			gw, ok := e.Alive[tok]
			if !ok {
				gw, ok = e.Dead[tok]
			}
			if !ok {
				gw, ok = e.Failed[tok]
			}
			if !ok {
				gw, ok = e.Deferred[tok]
			}
			if ok && s.Name != "" && gw != s.Name {
				wrongSim = append(wrongSim, tok)
			}
		}
	}
	var missing, dup, extra, deadAccepted, failedAccepted, deferredAccepted []string
	for tok := range e.Alive {
		switch n := got[tok]; {
		case n == 0:
			missing = append(missing, tok)
		case n > 1 && !e.AtLeastOnce:
			dup = append(dup, tok)
		}
	}
	for tok := range got {
		if _, ok := e.Alive[tok]; ok {
			continue
		}
		if _, ok := e.Dead[tok]; ok {
			deadAccepted = append(deadAccepted, tok)
		} else if _, ok := e.Failed[tok]; ok {
			failedAccepted = append(failedAccepted, tok)
		} else if _, ok := e.Deferred[tok]; ok {
			deferredAccepted = append(deferredAccepted, tok)
		} else {
			extra = append(extra, tok)
		}
	}
	p.tokens("expected tokens never accepted by a simulator", missing)
	p.tokens("tokens accepted more than once", dup)
	p.tokens("tokens accepted that the scenario does not target", extra)
	p.tokens("dead tokens accepted", deadAccepted)
	p.tokens("tokens accepted that must fail", failedAccepted)
	p.tokens("tokens accepted that must wait for the quota reset", deferredAccepted)
	p.tokens("tokens accepted by the wrong simulator", wrongSim)

	// The records against the expectation.
	want := e.byGateway()
	var wantTotal push.Tally
	for _, t := range want {
		wantTotal.Add(t)
	}
	p.tally("push records", rec.Total, wantTotal)
	for _, ch := range slices.Sorted(maps.Keys(unionKeys(want, rec.ByChannel))) {
		p.tally("push records, channel "+ch, rec.ByChannel[ch], want[ch])
	}

	// The records against the simulators: the records count a duplicated target once.
	var dups int64
	simDups := make([]int64, len(sims))
	if e.AtLeastOnce {
		dups, simDups = Duplicates(e, sims)
	}
	if accepted-dups != rec.Total.Sent {
		p.addf("simulators accepted %d pushes%s, push records count %d sent", accepted, ofThem(dups), rec.Total.Sent)
	}
	if dead != rec.Total.InvalidTokens {
		p.addf("simulators answered %d dead tokens, push records count %d invalid tokens", dead, rec.Total.InvalidTokens)
	}
	for i, s := range sims {
		if s.Name == "" {
			continue
		}
		if sent := rec.ByChannel[s.Name].Sent; s.Accepted-simDups[i] != sent {
			p.addf("simulator %s accepted %d pushes%s, push records count %d sent on channel %s",
				s.Name, s.Accepted, ofThem(simDups[i]), sent, s.Name)
		}
	}
	return p.list
}

func ofThem(dups int64) string {
	if dups == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them duplicates)", dups)
}

// Duplicates counts the acceptances of expected alive tokens beyond the first, in total and
// per simulator (in sims order; a token accepted by two simulators counts on the second).
// Only a scenario with AtLeastOnce tolerates them; Verify reports them otherwise.
func Duplicates(e *Expect, sims []SimDelta) (total int64, perSim []int64) {
	perSim = make([]int64, len(sims))
	seen := make(map[string]int64, len(e.Alive))
	for i, s := range sims {
		for tok, n := range s.PerToken {
			if _, ok := e.Alive[tok]; !ok || n <= 0 {
				continue
			}
			before := seen[tok]
			seen[tok] = before + n
			d := n
			if before == 0 {
				d = n - 1
			}
			perSim[i] += d
			total += d
		}
	}
	return total, perSim
}

func unionKeys(a, b map[string]push.Tally) map[string]struct{} {
	out := map[string]struct{}{}
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

type problems struct{ list []string }

func (p *problems) addf(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// tokens reports a set of tokens by count and a few abbreviated examples.
func (p *problems) tokens(what string, toks []string) {
	if len(toks) == 0 {
		return
	}
	slices.Sort(toks)
	ex := make([]string, 0, 3)
	for _, t := range toks[:min(3, len(toks))] {
		if len(t) > 12 {
			t = t[:12] + "..."
		}
		ex = append(ex, t)
	}
	p.addf("%s: %d (e.g. %s)", what, len(toks), strings.Join(ex, ", "))
}

func (p *problems) tally(what string, got, want push.Tally) {
	switch {
	case got.Equal(want):
	case got.Arrivals != 0 || want.Arrivals != 0: // the own channel's
		p.addf("%s: targets/sent/failed/expired/invalid/arrivals = %d/%d/%d/%d/%d/%d, want %d/%d/%d/%d/%d/%d", what,
			got.Targets, got.Sent, got.Failed, got.Expired, got.InvalidTokens, got.Arrivals,
			want.Targets, want.Sent, want.Failed, want.Expired, want.InvalidTokens, want.Arrivals)
	case got.Deferred != 0 || want.Deferred != 0: // a vendor quota's
		p.addf("%s: targets/sent/failed/expired/invalid/deferred = %d/%d/%d/%d/%d/%d, want %d/%d/%d/%d/%d/%d", what,
			got.Targets, got.Sent, got.Failed, got.Expired, got.InvalidTokens, got.Deferred,
			want.Targets, want.Sent, want.Failed, want.Expired, want.InvalidTokens, want.Deferred)
	default:
		p.addf("%s: targets/sent/failed/expired/invalid = %d/%d/%d/%d/%d, want %d/%d/%d/%d/%d", what,
			got.Targets, got.Sent, got.Failed, got.Expired, got.InvalidTokens,
			want.Targets, want.Sent, want.Failed, want.Expired, want.InvalidTokens)
	}
}
