// Package webhooksink is a delivery-event webhook receiver for tests and the load test: it
// verifies each request's signature, de-duplicates events by id and keeps a per-device
// ledger. It can answer 500 for a while, or hold requests, to exercise the sender's retries.
package webhooksink

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/pushd/pushd/webhook"
)

// Sink is an http.Handler receiving one app's (or several apps') webhook requests signed
// with Secret.
type Sink struct {
	Secret string
	// Tolerance bounds a signature's age (0: any).
	Tolerance time.Duration

	mu         sync.Mutex
	events     map[string]webhook.Wire   // by event id
	devices    map[string]map[string]int // token hash → type → events
	byType     map[string]int            // type → events
	byPush     map[string]map[string]int // push id → type → events
	requests   int                       // accepted requests
	duplicates int                       // events received again (same id)
	refused    int                       // requests answered 500 on purpose
	badSigs    int                       // requests with a bad signature (401)
	failLeft   int                       // answer 500 to this many more requests
	hold       chan struct{}             // non-nil: requests wait until it is closed
	changed    chan struct{}             // closed (and replaced) on every accepted request
}

// New returns a sink verifying with secret.
func New(secret string) *Sink {
	return &Sink{Secret: secret, events: map[string]webhook.Wire{}, devices: map[string]map[string]int{},
		byType: map[string]int{}, byPush: map[string]map[string]int{}, changed: make(chan struct{})}
}

// FailNext makes the sink answer 500 to the next n requests.
func (s *Sink) FailNext(n int) {
	s.mu.Lock()
	s.failLeft = n
	s.mu.Unlock()
}

// Hold makes requests wait (a slow receiver) until the returned release is called.
func (s *Sink) Hold() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.hold = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.hold = nil
			s.mu.Unlock()
			close(ch)
		})
	}
}

// ServeHTTP implements http.Handler.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if err := webhook.Verify(s.Secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), s.Tolerance); err != nil {
		s.mu.Lock()
		s.badSigs++
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var b webhook.Batch
	if err := json.Unmarshal(body, &b); err != nil {
		http.Error(w, "cannot decode the body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failLeft > 0 {
		s.failLeft--
		s.refused++
		http.Error(w, "failing on purpose", http.StatusInternalServerError)
		return
	}
	s.requests++
	for _, e := range b.Events {
		if _, dup := s.events[e.ID]; dup {
			s.duplicates++
			continue
		}
		s.events[e.ID] = e
		inc(s.devices, e.TokenHash, e.Type)
		inc(s.byPush, e.PushID, e.Type)
		s.byType[e.Type]++
	}
	close(s.changed)
	s.changed = make(chan struct{})
	w.WriteHeader(http.StatusNoContent)
}

func inc(m map[string]map[string]int, k, typ string) {
	if m[k] == nil {
		m[k] = map[string]int{}
	}
	m[k][typ]++
}

// Ledger is a snapshot of what a sink received, after de-duplication by event id.
type Ledger struct {
	Events     int
	ByType     map[string]int
	ByPush     map[string]map[string]int
	Devices    map[string]map[string]int // token hash → type → events
	Requests   int
	Duplicates int
	Refused    int
	BadSigs    int
}

// Ledger returns a copy of the ledger.
func (s *Sink) Ledger() Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := Ledger{Events: len(s.events), ByType: map[string]int{}, ByPush: map[string]map[string]int{}, Devices: map[string]map[string]int{},
		Requests: s.requests, Duplicates: s.duplicates, Refused: s.refused, BadSigs: s.badSigs}
	for k, v := range s.byType {
		l.ByType[k] = v
	}
	for k, m := range s.byPush {
		l.ByPush[k] = copyCounts(m)
	}
	for k, m := range s.devices {
		l.Devices[k] = copyCounts(m)
	}
	return l
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Changed returns a channel closed at the next accepted request (for waiting without polling).
func (s *Sink) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Events returns the events received, once each by id.
func (s *Sink) Events() []webhook.Wire {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]webhook.Wire, 0, len(s.events))
	for _, e := range s.events {
		out = append(out, e)
	}
	return out
}
