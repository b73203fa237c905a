package push

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// MaxBadge bounds a badge a push sets: iOS keeps the app icon's badge in a 32-bit integer,
// and the APNs payload reserves room for this many digits.
const MaxBadge = math.MaxInt32

// DeadTokenWindow is how long a dead device id named in /1.1/push/devices with no
// installation is remembered, counted from when the gateway says it died: the spec drops "all
// later messages" to a dead token, and an installation holding a token that long unrefreshed
// would itself be gone (InactiveAfter), so the memory lasts as long as an installation would.
const DeadTokenWindow = InactiveAfter

// DocBadge returns the badge stored in an installation document: a missing, non-numeric or
// negative badge is 0, a fractional one is rounded down, and one past MaxBadge is MaxBadge.
func DocBadge(doc []byte) int64 {
	var v struct {
		Badge any `json:"badge"`
	}
	if json.Unmarshal(doc, &v) != nil {
		return 0
	}
	f, ok := v.Badge.(float64)
	if !ok || math.IsNaN(f) || f <= 0 {
		return 0
	}
	return int64(min(math.Floor(f), MaxBadge))
}

// NextBadge is the badge a "badge": "Increment" push gives an installation whose document
// is doc: its stored badge plus one, at most MaxBadge.
func NextBadge(doc []byte) int64 { return min(DocBadge(doc)+1, MaxBadge) }

// WithBadge returns doc with its badge set to n and every other member unchanged. Stored
// documents are json.Marshal's encoding of a map (keys sorted, as api/jsondoc writes them),
// so decoding and encoding again keeps them byte for byte apart from the badge.
func WithBadge(doc []byte, n int64) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil || m == nil {
		return nil, fmt.Errorf("cannot set the badge of an installation document: %w", errNotObject(err))
	}
	m["badge"] = float64(n)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cannot set the badge of an installation document: %w", err)
	}
	return out, nil
}

func errNotObject(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("not a JSON object")
}

// DeadTokenLive says whether a dead-token mark set at since still applies at now.
func DeadTokenLive(since, now time.Time) bool {
	return now.Before(since.Add(DeadTokenWindow))
}
