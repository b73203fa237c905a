package sim

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// OutageMode is how a simulator in an outage treats every send request.
type OutageMode string

const (
	// OutageStatus answers Status (default 503) with the gateway's reason for it, and a
	// Retry-After header when RetryAfter > 0 (e.g. 429 with Retry-After).
	OutageStatus OutageMode = "status"
	// OutageDrop closes the request's connection without an answer (connection loss).
	OutageDrop OutageMode = "drop"
	// OutageGoAway answers 503 (APNs reason Shutdown, FCM UNAVAILABLE) and sends a GOAWAY
	// frame: the connection takes no new streams and closes once idle, as a gateway host going
	// down for maintenance does.
	OutageGoAway OutageMode = "goaway"
)

// Outage is one phase of a scripted gateway outage: for For, every send request is treated
// as Mode says. Control paths (/_stats, ...) and the FCM token endpoint keep working.
type Outage struct {
	Mode       OutageMode
	Status     int           // OutageStatus: the status (default 503)
	Reason     string        // OutageStatus: APNs reason / FCM errorCode; "" takes the status's usual one
	RetryAfter time.Duration // OutageStatus: the Retry-After header (0: none)
	For        time.Duration
}

// Validate reports a phase that cannot be served.
func (o Outage) Validate() error {
	switch o.Mode {
	case OutageStatus:
		if o.Status != 0 && (o.Status < 400 || o.Status > 599) {
			return fmt.Errorf("outage status %d: want 4xx or 5xx", o.Status)
		}
	case OutageDrop, OutageGoAway:
	default:
		return fmt.Errorf("unknown outage mode %q: want status, drop or goaway", o.Mode)
	}
	if o.For <= 0 || o.RetryAfter < 0 {
		return fmt.Errorf("outage phase %s: for must be positive and retry_after not negative", o.Mode)
	}
	return nil
}

// outage holds the scripted phases of a simulator; the phases run back to back from start.
type outage struct {
	now func() time.Time

	mu     sync.Mutex
	start  time.Time
	phases []Outage // guarded by mu
}

// begin replaces any outage with phases, starting now.
func (o *outage) begin(phases []Outage) error {
	for _, p := range phases {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	o.mu.Lock()
	o.start = o.now()
	o.phases = append([]Outage(nil), phases...)
	o.mu.Unlock()
	return nil
}

func (o *outage) end() {
	o.mu.Lock()
	o.phases = nil
	o.mu.Unlock()
}

// current returns the phase in force, if any.
func (o *outage) current() (Outage, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.phases) == 0 {
		return Outage{}, false
	}
	el := o.now().Sub(o.start)
	for _, p := range o.phases {
		if el < p.For {
			return p, true
		}
		el -= p.For
	}
	o.phases = nil // over: forget it
	return Outage{}, false
}

// netConnKey is the context key of a request's connection (set by startServer).
type netConnKey struct{}

// dropConn closes the connection r arrived on; the handler must not write afterwards.
func dropConn(r *http.Request) {
	if c, ok := r.Context().Value(netConnKey{}).(net.Conn); ok {
		_ = c.Close()
	}
}

// goAway makes the answer being written carry a GOAWAY: net/http's HTTP/2 server turns a
// "Connection: close" response header into a graceful shutdown of the connection.
func goAway(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// outageJSON is a phase as POST /_outage takes it: durations as Go duration strings.
type outageJSON struct {
	Mode       OutageMode `json:"mode"`
	Status     int        `json:"status,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	RetryAfter string     `json:"retry_after,omitempty"`
	For        string     `json:"for"`
}

// serveOutage answers POST /_outage: a JSON array of phases starts an outage (replacing
// any), an empty array or DELETE ends it.
func serveOutage(w http.ResponseWriter, r *http.Request, o *outage) {
	switch r.Method {
	case http.MethodDelete:
		o.end()
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var in []outageJSON
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, "cannot read outage phases: "+err.Error(), http.StatusBadRequest)
		return
	}
	phases := make([]Outage, len(in))
	for i, p := range in {
		phases[i] = Outage{Mode: p.Mode, Status: p.Status, Reason: p.Reason}
		var err error
		if phases[i].For, err = time.ParseDuration(p.For); err != nil {
			http.Error(w, fmt.Sprintf("outage phase %d: bad for %q", i, p.For), http.StatusBadRequest)
			return
		}
		if p.RetryAfter != "" {
			if phases[i].RetryAfter, err = time.ParseDuration(p.RetryAfter); err != nil {
				http.Error(w, fmt.Sprintf("outage phase %d: bad retry_after %q", i, p.RetryAfter), http.StatusBadRequest)
				return
			}
		}
	}
	if err := o.begin(phases); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
