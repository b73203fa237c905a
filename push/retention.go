package push

import "time"

// RecordRetention is how long a push record is kept once its push is finished (ORIGINAL-NOTES
// 2.7: "kept 7 days, independent of message expiry").
const RecordRetention = 7 * 24 * time.Hour

// Finished reports whether the record's push reached a final status (done or cancelled).
// Only a finished record may expire: fan-out writes its counts into an unfinished one, and
// DELETE /1.1/notifications cancels through it.
func (n *Notification) Finished() bool {
	return n.Status == StatusDone || n.Status == StatusCancelled
}

// Expired reports whether a finished record's retention ended before cutoff (now minus
// RecordRetention): both its creation and its last update (when it became final, or later)
// are before cutoff. An unfinished record never expires.
func (n *Notification) Expired(cutoff time.Time) bool {
	return n.Finished() && n.CreatedAt.Before(cutoff) && n.UpdatedAt.Before(cutoff)
}
