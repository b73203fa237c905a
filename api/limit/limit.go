// Package limit owns admission control of push calls: the per-app calls-per-minute limit of
// the spec. Counting is per calendar minute (as CLUSTER.md's call_counts table); the call that
// goes over the limit and every push call of that app for the next minute are refused with 429,
// then calls are admitted again. Refused calls are not counted.
//
// A Limiter is safe for concurrent use. Its state is per process: in a cluster each API node
// enforces the limit on its own share (documented in docs/decisions.md).
package limit

import (
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Block is how long an app is refused once over its limit.
const Block = time.Minute

const shards = 64

// Limiter counts push calls per app and minute.
type Limiter struct {
	now    func() time.Time
	shards [shards]shard

	admitted *metrics.Counter
	refused  *metrics.Counter
}

type shard struct {
	mu   sync.Mutex
	apps map[string]*appState
}

type appState struct {
	minute       int64 // unix minute the count belongs to
	count        int
	blockedUntil time.Time
}

// New returns a limiter. now may be nil (time.Now); set is where its counters live.
func New(now func() time.Time, set *metrics.Set) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now}
	for i := range l.shards {
		l.shards[i].apps = make(map[string]*appState)
	}
	if set != nil {
		l.admitted = set.GetOrCreateCounter(`pushd_api_push_calls_total{decision="admitted"}`)
		l.refused = set.GetOrCreateCounter(`pushd_api_push_calls_total{decision="refused"}`)
	}
	return l
}

// Allow counts one push call of appID against perMinute. It returns ok=false with the time
// after which calls are admitted again when the app is over its limit.
func (l *Limiter) Allow(appID string, perMinute int) (ok bool, retryAfter time.Duration) {
	now := l.now()
	sh := &l.shards[shardOf(appID)]
	sh.mu.Lock()
	st := sh.apps[appID]
	if st == nil {
		st = &appState{}
		sh.apps[appID] = st
	}
	if now.Before(st.blockedUntil) {
		wait := st.blockedUntil.Sub(now)
		sh.mu.Unlock()
		l.count(false)
		return false, wait
	}
	minute := now.Unix() / 60
	if st.minute != minute {
		st.minute, st.count = minute, 0
	}
	if st.count >= perMinute {
		st.blockedUntil = now.Add(Block)
		sh.mu.Unlock()
		l.count(false)
		return false, Block
	}
	st.count++
	sh.mu.Unlock()
	l.count(true)
	return true, 0
}

func (l *Limiter) count(ok bool) {
	if l.admitted == nil {
		return
	}
	if ok {
		l.admitted.Inc()
	} else {
		l.refused.Inc()
	}
}

func shardOf(s string) int {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return int(h % shards)
}
