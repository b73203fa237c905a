package vendor

import (
	"testing"
	"time"

	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/gateway"
)

// TestHMSFamilyPieces: the pieces HMS and Honor share: ttl rounded up within 1 s..most, the
// pass-through data object, and the reply by HTTP status for codes outside a vendor's table.
func TestHMSFamilyPieces(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "1s"}, {-time.Hour, "1s"}, {1500 * time.Millisecond, "2s"}, {time.Hour, "3600s"}, {30 * 24 * time.Hour, "1296000s"}} {
		if got := TTLSeconds(c.d, 15*24*time.Hour); got != c.want {
			t.Errorf("TTLSeconds(%v) = %s, want %s", c.d, got, c.want)
		}
	}
	d, err := PassThroughData(&render.VendorBody{Title: "T", Alert: "A", Custom: []byte(`{"k":1,"alert":"x"}`)})
	if err != nil || d != `{"alert":"A","k":1,"title":"T"}` {
		t.Errorf("PassThroughData = %s, %v", d, err)
	}
	if _, err := PassThroughData(&render.VendorBody{Custom: []byte(`[1]`)}); err != ErrBadBody {
		t.Errorf("custom not an object: %v", err)
	}
	for _, c := range []struct {
		status int
		code   string
		want   gateway.Kind
	}{
		{401, "", gateway.KindAuth}, {429, "", gateway.KindRetry}, {503, "x", gateway.KindRetry},
		{403, "", gateway.KindCredentials}, {404, "", gateway.KindCredentials},
		{200, "", gateway.KindRetry}, {200, "123", gateway.KindFailed}, {400, "", gateway.KindFailed},
	} {
		if r := StatusReply("v", c.status, c.code, "2"); r.Kind != c.want || r.Reason == "" ||
			(r.Kind == gateway.KindRetry && c.status >= 429 && r.RetryAfter != 2*time.Second) {
			t.Errorf("StatusReply(%d, %q) = %+v, want %v", c.status, c.code, r, c.want)
		}
	}
}
