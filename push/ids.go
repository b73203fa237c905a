package push

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewObjectID returns 24 random lowercase hex digits, the shape of the original service's ids.
func NewObjectID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// NewNotificationID returns a generated notification_id: 16 lowercase letters and digits,
// the longest a caller may choose.
func NewNotificationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Day is the daily-volume day of t: the UTC date. Intake and fan-out must agree on it.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }
