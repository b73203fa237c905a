package sim

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
)

// Stats is what a simulator answered since start or the last Reset.
type Stats struct {
	Requests int64            `json:"requests"`  // send requests answered (not token-endpoint or /_stats calls)
	Accepted int64            `json:"accepted"`  // answered 200 and "delivered" (FCM validate_only excluded)
	ByStatus map[int]int64    `json:"by_status"` // HTTP status → answers
	ByReason map[string]int64 `json:"by_reason"` // APNs reason / FCM errorCode (or status) → answers
	// PerToken counts accepted notifications per device token; tests and the load test use
	// it to prove each target got exactly what it should.
	PerToken map[string]int64 `json:"per_token,omitempty"`
	// PerTopic counts accepted FCM topic and condition messages ("topic:x", "condition:...").
	PerTopic     map[string]int64 `json:"per_topic,omitempty"`
	ValidateOnly int64            `json:"validate_only,omitempty"` // FCM dry runs answered 200
	// AuthTokens counts distinct credentials seen: APNs provider JWTs verified, FCM access
	// tokens issued by the token endpoint.
	AuthTokens int64 `json:"auth_tokens"`
	// Outage counts the send requests that met an outage (StartOutage, POST /_outage),
	// dropped ones included; those answered are in Requests too. InOutage is whether an
	// outage phase is in force.
	Outage   int64 `json:"outage"`
	InOutage bool  `json:"in_outage"`
}

// Sent is one accepted notification, kept when the config asks to record them.
type Sent struct {
	Target  string            `json:"target"`            // device token, or "topic:x" / "condition:..." (FCM)
	Project string            `json:"project,omitempty"` // FCM project
	Headers map[string]string `json:"headers,omitempty"` // APNs: the apns-* headers, lower-case names
	Body    json.RawMessage   `json:"body"`              // request body as received
	// Peer is the client's address (host:port) the request came on: which of several
	// clients sent it (clustertest tells its nodes apart by their proxies' addresses).
	Peer string `json:"peer,omitempty"`
	// NotifyID is the push's identity as this gateway's request carried it (notifyid.go):
	// a vendor's notify id, Meizu's notifyKey, FCM's tag, APNs' apns-collapse-id, or the
	// "_nid" of a data message; "" when the request carried none.
	NotifyID string `json:"notifyId,omitempty"`
}

// recorder accumulates Stats. One mutex: a simulator answers at most some tens of thousands
// of requests per second on the machines we test on, far below where it would contend.
type recorder struct {
	noTokens  bool
	recordMax int
	outage    *outage

	mu sync.Mutex
	st Stats
	// sent keeps up to recordMax accepted notifications, guarded by mu.
	sent []Sent
}

func newRecorder(noTokens bool, recordMax int, o *outage) *recorder {
	r := &recorder{noTokens: noTokens, recordMax: recordMax, outage: o}
	r.resetLocked()
	return r
}

func (r *recorder) resetLocked() {
	r.st = Stats{
		ByStatus: make(map[int]int64),
		ByReason: make(map[string]int64),
		PerToken: make(map[string]int64),
		PerTopic: make(map[string]int64),
	}
	r.sent = nil
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.resetLocked()
	r.mu.Unlock()
}

// answer counts one non-accepted send answer.
func (r *recorder) answer(status int, reason string) {
	r.mu.Lock()
	r.st.Requests++
	r.st.ByStatus[status]++
	if reason != "" {
		r.st.ByReason[reason]++
	}
	r.mu.Unlock()
}

// accepted counts one 200. topic marks an FCM topic/condition target. s is recorded if the
// recorder keeps notifications and has room; it is built only then (by mk).
func (r *recorder) accepted(target string, topic bool, mk func() Sent) {
	r.mu.Lock()
	r.st.Requests++
	r.st.Accepted++
	r.st.ByStatus[http.StatusOK]++
	if !r.noTokens {
		if topic {
			r.st.PerTopic[target]++
		} else {
			r.st.PerToken[target]++
		}
	}
	keep := r.recordMax > 0 && len(r.sent) < r.recordMax
	r.mu.Unlock()
	if keep {
		s := mk()
		r.mu.Lock()
		if len(r.sent) < r.recordMax {
			r.sent = append(r.sent, s)
		}
		r.mu.Unlock()
	}
}

func (r *recorder) validateOnly() {
	r.mu.Lock()
	r.st.Requests++
	r.st.ValidateOnly++
	r.st.ByStatus[http.StatusOK]++
	r.mu.Unlock()
}

// outageHit counts one send request taken by the outage.
func (r *recorder) outageHit() {
	r.mu.Lock()
	r.st.Outage++
	r.mu.Unlock()
}

func (r *recorder) authToken() {
	r.mu.Lock()
	r.st.AuthTokens++
	r.mu.Unlock()
}

func (r *recorder) snapshot(withTokens bool) Stats {
	_, inOutage := r.outage.current()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.InOutage = inOutage
	st.ByStatus = maps.Clone(r.st.ByStatus)
	st.ByReason = maps.Clone(r.st.ByReason)
	if withTokens {
		st.PerToken = maps.Clone(r.st.PerToken)
		st.PerTopic = maps.Clone(r.st.PerTopic)
	} else {
		st.PerToken, st.PerTopic = nil, nil
	}
	return st
}

func (r *recorder) recorded() []Sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}

// serveControl answers the control endpoints shared by both simulators:
// GET /_stats[?tokens=0] (JSON Stats), GET /_sent (recorded notifications), POST /_reset,
// POST /_outage (a JSON array of outage phases; [] or DELETE ends the outage),
// GET or POST /_latency ({"latency":"20ms"}: the latency added to every answer from now on).
// It reports whether the path was a control path.
func (r *recorder) serveControl(w http.ResponseWriter, req *http.Request, reset func(), f *faults) bool {
	switch req.URL.Path {
	case "/_stats":
		withTokens := req.URL.Query().Get("tokens") != "0"
		writeJSON(w, http.StatusOK, r.snapshot(withTokens))
	case "/_sent":
		sent := r.recorded()
		for i := range sent {
			if !json.Valid(sent[i].Body) { // a form body (Xiaomi): sent as a JSON string
				sent[i].Body, _ = json.Marshal(string(sent[i].Body))
			}
		}
		writeJSON(w, http.StatusOK, sent)
	case "/_outage":
		serveOutage(w, req, r.outage)
	case "/_latency":
		f.serveLatency(w, req)
	case "/_reset":
		if req.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return true
		}
		reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("BUG: cannot marshal simulator JSON: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
