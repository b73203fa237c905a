package embedded

import "testing"

func TestEmbeddedEnvelopeLen(t *testing.T) {
	for _, kl := range []int{0, 1, 127, 128, 300, 20000} {
		for _, vl := range []int{0, 5, 4096} {
			k, v := make([]byte, kl), make([]byte, vl)
			if got, want := envelopeLen(k, v), len(appendEnvelope(nil, k, v)); got != want {
				t.Errorf("envelopeLen(%d-byte key, %d-byte value) = %d, want %d", kl, vl, got, want)
			}
		}
	}
}
