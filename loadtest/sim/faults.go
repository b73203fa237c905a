package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is one scripted gateway answer: Status with a gateway-specific Reason (APNs reason
// string, or FCM errorCode such as "UNAVAILABLE"), and a Retry-After header when RetryAfter > 0.
// An empty Reason takes the gateway's usual one for Status.
type Fault struct {
	Status     int
	Reason     string
	RetryAfter time.Duration
}

// Knobs are the load and fault settings both simulators share.
type Knobs struct {
	// Latency is added to every answer; Jitter adds a uniform random [0, Jitter) on top.
	Latency, Jitter time.Duration
	// ErrorRate is the fraction (0..1) of requests answered with a random server error
	// (APNs 500 InternalServerError / 503 ServiceUnavailable, FCM 500 INTERNAL / 503 UNAVAILABLE).
	ErrorRate float64
	// InvalidTokenRate is the fraction (0..1) of device tokens that are dead (APNs 410
	// Unregistered, FCM 404 UNREGISTERED). Which tokens is a pure function of the token and
	// Seed (see IsDeadToken), so repeated sends to one token always get the same answer.
	InvalidTokenRate float64
	// RatePerSecond caps throughput: requests beyond it wait (are paced) rather than fail,
	// like a gateway slower than the sender. 0 means no cap.
	RatePerSecond float64
	// Seed makes the random faults and jitter repeatable.
	Seed uint64
	// ReceiptUninstalledRate is the fraction (0..1) of accepted tokens whose delivery receipt
	// says the app is uninstalled (HMS/Honor status 2, Xiaomi type 16, OPPO regid_invalid)
	// instead of delivered; vivo and Meizu, whose receipts report arrivals only, post none for
	// them. Which tokens is ReceiptUninstalled (a pure function of the token and Seed).
	ReceiptUninstalledRate float64
}

// ReceiptUninstalled says whether a simulator with rate and seed reports token uninstalled in
// its receipts: independent of IsDeadToken's choice (another seed).
func ReceiptUninstalled(token string, rate float64, seed uint64) bool {
	return IsDeadToken(token, rate, seed^0x5eceb7)
}

// faults holds the scripted answers, the random source and the pacer.
type faults struct {
	k Knobs
	// latency is k.Latency, changed at run time by POST /_latency (SetLatency).
	latency atomic.Int64

	mu     sync.Mutex
	script []scripted // consumed front to back
	rng    *rand.Rand // guarded by mu
	next   time.Time  // pacer: earliest start of the next request, guarded by mu
}

type scripted struct {
	f Fault
	n int
}

func newFaults(k Knobs) *faults {
	f := &faults{k: k, rng: rand.New(rand.NewPCG(k.Seed, k.Seed^0x9e3779b97f4a7c15))}
	f.latency.Store(int64(k.Latency))
	return f
}

// setLatency replaces the latency added to every answer from now on.
func (f *faults) setLatency(d time.Duration) { f.latency.Store(int64(d)) }

// serveLatency answers /_latency: GET gives {"latency":"20ms"}, POST {"latency":"20ms"} sets it
// for the answers that follow (the load test's latency comparison changes it between pushes).
func (f *faults) serveLatency(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Latency string `json:"latency"`
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&in); err != nil {
			http.Error(w, "cannot read the latency: "+err.Error(), http.StatusBadRequest)
			return
		}
		d, err := time.ParseDuration(in.Latency)
		if err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("bad latency %q: want a duration such as 20ms, not negative", in.Latency), http.StatusBadRequest)
			return
		}
		f.setLatency(d)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	in.Latency = time.Duration(f.latency.Load()).String()
	writeJSON(w, http.StatusOK, in)
}

// inject queues f as the answer to the next n requests (after anything already scripted).
func (f *faults) inject(n int, fault Fault) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	f.script = append(f.script, scripted{f: fault, n: n})
	f.mu.Unlock()
}

func (f *faults) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.script {
		n += s.n
	}
	return n
}

// take returns the scripted or random fault for this request, if any. serverError picks the
// gateway's error for the random ErrorRate given a coin flip.
func (f *faults) take() (Fault, bool) {
	if f.k.ErrorRate <= 0 {
		f.mu.Lock()
		if len(f.script) == 0 {
			f.mu.Unlock()
			return Fault{}, false
		}
		fault := f.popLocked()
		f.mu.Unlock()
		return fault, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.script) > 0 {
		return f.popLocked(), true
	}
	if f.rng.Float64() < f.k.ErrorRate {
		if f.rng.IntN(2) == 0 {
			return Fault{Status: 500}, true
		}
		return Fault{Status: 503}, true
	}
	return Fault{}, false
}

// popLocked consumes one scripted answer; the caller holds mu and checked len(script) > 0.
func (f *faults) popLocked() Fault {
	s := &f.script[0]
	fault := s.f
	s.n--
	if s.n == 0 {
		f.script[0] = scripted{}
		f.script = f.script[1:]
	}
	return fault
}

// wait applies the throughput cap and the latency; it returns false if ctx ended first.
func (f *faults) wait(ctx context.Context, now time.Time) bool {
	var d time.Duration
	if f.k.RatePerSecond > 0 {
		step := time.Duration(float64(time.Second) / f.k.RatePerSecond)
		f.mu.Lock()
		start := f.next
		if start.Before(now) {
			start = now
		}
		f.next = start.Add(step)
		f.mu.Unlock()
		d = start.Sub(now)
	}
	d += time.Duration(f.latency.Load())
	if f.k.Jitter > 0 {
		f.mu.Lock()
		d += time.Duration(f.rng.Int64N(int64(f.k.Jitter)))
		f.mu.Unlock()
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// IsDeadToken reports whether InvalidTokenRate (with seed) makes token dead. The load test
// driver uses it to know in advance which targets the simulator will reject.
func IsDeadToken(token string, rate float64, seed uint64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	// FNV-1a over seed then token, inlined so the hot path does not allocate.
	h := uint64(14695981039346656037)
	for i := 0; i < 8; i++ {
		h ^= (seed >> (8 * i)) & 0xff
		h *= 1099511628211
	}
	for i := 0; i < len(token); i++ {
		h ^= uint64(token[i])
		h *= 1099511628211
	}
	// splitmix64 finalizer: FNV alone leaves the top bits poorly mixed for tokens that differ
	// only in their last characters.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11)/float64(1<<53) < rate
}
