package sim

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// acceptedMany counts one vendor request that delivered to every token of tokens (a batch),
// recording it once if the recorder keeps notifications.
func (r *recorder) acceptedMany(tokens []string, reason string, mk func() Sent) {
	r.mu.Lock()
	r.st.Requests++
	r.st.Accepted += int64(len(tokens))
	r.st.ByStatus[http.StatusOK]++
	if reason != "" {
		r.st.ByReason[reason]++
	}
	if !r.noTokens {
		for _, t := range tokens {
			r.st.PerToken[t]++
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

// tokenBucket limits targets per second per app (vendor rate limits count tokens, not requests).
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

// take takes n tokens at now; false (and nothing taken) when fewer are left.
func (b *tokenBucket) take(now time.Time, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens, b.last = b.rate, now
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(b.rate, b.tokens+el.Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}

// readSmall reads a request body up to limit bytes; tooLarge when it is longer.
func readSmall(r io.Reader, limit int) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	return b, len(b) > limit, nil
}

// validVendorToken accepts a registration id: printable ASCII without separators, 1–4096 bytes.
func validVendorToken(t string) bool {
	if t == "" || len(t) > 4096 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c >= 0x7f || c == ',' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
