// Package limit owns admission control of push calls: the per-app calls-per-minute limit of
// the spec. Counting is per calendar minute (CLUSTER.md's call_counts); the call that goes
// over the limit and every push call of that app for the next minute are refused with 429
// (app_blocks), then calls are admitted again. Refused calls are not counted.
//
// The counts and blocks live in the store, so every API node over one store enforces one
// limit. To keep the hot path off the store, a node reserves a slice of the minute's budget
// at a time (sliceOf) and admits from it locally; the store never grants more than the limit
// in total, so the cluster never admits more than the limit. Slices are small next to the
// limit and shrink to one call once a reservation comes back short, so the calls a node holds
// unused when the budget runs out are few; a node still holding some admits them (they were
// counted) while the others refuse. Under steady traffic on every node the cluster admits
// exactly the limit; docs/decisions.md has the trade-off.
//
// A Limiter is safe for concurrent use: one app's calls wait on each other only while this
// node reserves a slice or reads the app's block.
package limit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Block is how long an app is refused once over its limit.
const Block = time.Minute

// Store keeps the counts every API node shares (store.Store implements it).
type Store interface {
	ReserveCalls(ctx context.Context, appID string, minute int64, want, limit int) (granted int, err error)
	BlockApp(ctx context.Context, appID string, until time.Time) error
	AppBlocked(ctx context.Context, appID string, now time.Time) (time.Time, error)
}

// maxSlice bounds the calls one reservation takes: one store write per 64 calls at most
// keeps the store's cost per call small, and at most 64 calls per node and app stay unused
// when the minute's budget runs out.
const maxSlice = 64

// sliceDiv sizes a slice as a part of the limit: with limit/32 per reservation, a cluster of
// up to 32 busy nodes holds at most the whole budget in slices, and a limit under 64 reserves
// one call at a time (exact at any node count).
const sliceDiv = 32

// sliceOf is how many calls a node reserves at once for an app allowed perMinute.
func sliceOf(perMinute int) int { return max(1, min(maxSlice, perMinute/sliceDiv)) }

const shards = 64

// Limiter admits push calls per app and minute against the shared counts of a Store.
type Limiter struct {
	st     Store
	now    func() time.Time
	shards [shards]shard

	admitted *metrics.Counter
	refused  *metrics.Counter
	reserves *metrics.Counter
}

type shard struct {
	mu   sync.Mutex
	apps map[string]*appState
}

// appState is this node's view of one app: the slice it holds and the block it knows of.
type appState struct {
	mu           sync.Mutex
	minute       int64 // unix minute the slice belongs to
	slots        int   // calls reserved in the store and not yet admitted
	tail         bool  // a reservation of this minute came back short: reserve one at a time
	blockedUntil time.Time
}

// New returns a limiter over st; nil st keeps the counts in this process only (a single
// node, or tests). now may be nil (time.Now); set is where its counters live.
func New(st Store, now func() time.Time, set *metrics.Set) *Limiter {
	if now == nil {
		now = time.Now
	}
	if st == nil {
		st = newMemStore()
	}
	l := &Limiter{st: st, now: now}
	for i := range l.shards {
		l.shards[i].apps = make(map[string]*appState)
	}
	if set == nil {
		set = metrics.NewSet()
	}
	l.admitted = set.GetOrCreateCounter(`pushd_api_push_calls_total{decision="admitted"}`)
	l.refused = set.GetOrCreateCounter(`pushd_api_push_calls_total{decision="refused"}`)
	l.reserves = set.GetOrCreateCounter(`pushd_api_call_reservations_total`)
	return l
}

// Allow counts one push call of appID against perMinute. It returns ok=false with the time
// after which calls are admitted again when the app is over its limit.
func (l *Limiter) Allow(ctx context.Context, appID string, perMinute int) (ok bool, retryAfter time.Duration, err error) {
	now := l.now()
	st := l.state(appID)
	st.mu.Lock()
	defer st.mu.Unlock()
	if now.Before(st.blockedUntil) {
		l.refused.Inc()
		return false, st.blockedUntil.Sub(now), nil
	}
	minute := now.Unix() / 60
	if st.minute != minute {
		st.minute, st.slots, st.tail = minute, 0, false
	}
	if st.slots > 0 {
		st.slots--
		l.admitted.Inc()
		return true, 0, nil
	}
	// Out of slots: another node may have blocked the app meanwhile.
	until, err := l.st.AppBlocked(ctx, appID, now)
	if err != nil {
		return false, 0, fmt.Errorf("cannot check the call limit of app %s: %w", appID, err)
	}
	if !until.IsZero() {
		st.blockedUntil = until
		l.refused.Inc()
		return false, until.Sub(now), nil
	}
	want := sliceOf(perMinute)
	if st.tail {
		want = 1
	}
	granted, err := l.st.ReserveCalls(ctx, appID, minute, want, perMinute)
	l.reserves.Inc()
	if err != nil {
		return false, 0, fmt.Errorf("cannot count a call of app %s: %w", appID, err)
	}
	if granted < want {
		st.tail = true
	}
	if granted == 0 {
		until := now.Add(Block)
		if err := l.st.BlockApp(ctx, appID, until); err != nil {
			return false, 0, fmt.Errorf("cannot block app %s: %w", appID, err)
		}
		st.blockedUntil = until
		l.refused.Inc()
		return false, Block, nil
	}
	st.slots = granted - 1
	l.admitted.Inc()
	return true, 0, nil
}

func (l *Limiter) state(appID string) *appState {
	sh := &l.shards[shardOf(appID)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.apps[appID]
	if st == nil {
		st = &appState{}
		sh.apps[appID] = st
	}
	return st
}

func shardOf(s string) int {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return int(h % shards)
}

// memStore is a Store in this process's memory: the limit of one node.
type memStore struct {
	mu     sync.Mutex
	counts map[string][2]int64 // app → minute, count
	blocks map[string]time.Time
}

func newMemStore() *memStore {
	return &memStore{counts: make(map[string][2]int64), blocks: make(map[string]time.Time)}
}

func (m *memStore) ReserveCalls(_ context.Context, appID string, minute int64, want, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts[appID]
	if c[0] != minute {
		c = [2]int64{minute, 0}
	}
	granted := max(0, min(int64(want), int64(limit)-c[1]))
	c[1] += granted
	m.counts[appID] = c
	return int(granted), nil
}

func (m *memStore) BlockApp(_ context.Context, appID string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if until.After(m.blocks[appID]) {
		m.blocks[appID] = until
	}
	return nil
}

func (m *memStore) AppBlocked(_ context.Context, appID string, now time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.blocks[appID]; u.After(now) {
		return u, nil
	}
	return time.Time{}, nil
}
