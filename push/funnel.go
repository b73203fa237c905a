package push

import "time"

// FunnelGrace is how long after a push's expiry a target may still be counted pending: the
// own-channel gateway counts a message when it caches it, and fan-out's deliveries in flight at
// the expiry end within the senders' drain; past the grace a target that is still pending
// can no longer be sent (every gateway refuses an expired message), so it is shown expired.
const FunnelGrace = 5 * time.Minute

// Funnel is one delivery channel's (or device type's) funnel as the record's API shows it.
// At every moment Targets = Sent + Failed + Expired + Deferred + Pending, and Arrived counts
// the sent targets a device acknowledged or a vendor receipt confirmed. InvalidTokens (dead
// tokens, within Failed) and Arrivals (= Arrived) keep the names readers of the record used
// before the funnel.
type Funnel struct {
	Targets       int64            `json:"targets"`
	Sent          int64            `json:"sent"`
	Arrived       int64            `json:"arrived"`
	Failed        int64            `json:"failed"`
	FailedBy      map[string]int64 `json:"failedBy"`
	Expired       int64            `json:"expired"`
	Deferred      int64            `json:"deferred"`
	Pending       int64            `json:"pending"`
	InvalidTokens int64            `json:"invalidTokens"`
	Arrivals      int64            `json:"arrivals"`
}

// FailUnknown is the failedBy class of failures counted before the record kept classes.
const FailUnknown = "unknown"

// FunnelOf is t's funnel at now for a push expiring at expiresAt (zero: never).
//
// Targets are the targets counted so far: fan-out counts a task's targets when the task
// finishes, while the own-channel gateway counts each message sent (or expired) as it caches
// it, which may come first; the funnel's targets are then the larger of the two, so pending is
// never negative. Past expiresAt + FunnelGrace nothing is pending any more: what still is
// counts as expired.
func FunnelOf(t Tally, expiresAt, now time.Time) Funnel {
	f := Funnel{
		Sent:          t.Sent,
		Arrived:       t.Arrivals,
		Arrivals:      t.Arrivals,
		Failed:        t.Failed + t.InvalidTokens,
		FailedBy:      make(map[string]int64, len(t.FailedBy)+1),
		Expired:       t.Expired,
		Deferred:      t.Deferred,
		InvalidTokens: t.InvalidTokens,
	}
	classified := int64(0)
	for k, v := range t.FailedBy {
		if v != 0 {
			f.FailedBy[k] = v
			classified += v
		}
	}
	if rest := t.Failed - classified; rest > 0 {
		f.FailedBy[FailUnknown] += rest
	}
	if t.InvalidTokens > 0 {
		f.FailedBy[FailInvalidToken] += t.InvalidTokens
	}
	ended := f.Sent + f.Failed + f.Expired + f.Deferred
	f.Targets = max(t.Targets, ended)
	f.Pending = f.Targets - ended
	if f.Pending > 0 && !expiresAt.IsZero() && !now.Before(expiresAt.Add(FunnelGrace)) {
		f.Expired += f.Pending
		f.Pending = 0
	}
	return f
}
