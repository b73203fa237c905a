package node

import (
	"crypto/rand"
	"encoding/hex"
)

// randomHex is n random bytes in hex: the dev app's receipt callback key (a new one each start,
// as the simulators' other credentials).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
