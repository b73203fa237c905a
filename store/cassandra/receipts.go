package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
)

// Vendor receipts (issue 20 item 5): a mark per (record, channel, device) in receipt_marks and
// the record's arrivals of the channel in notification_counts.
const (
	cqlReceiptMarks    = `SELECT device_id FROM receipt_marks WHERE app_id = ? AND object_id = ? AND channel = ? AND device_id IN ?`
	cqlReceiptMarkPut  = `INSERT INTO receipt_marks (app_id, object_id, channel, device_id) VALUES (?, ?, ?, ?) USING TTL ?`
	cqlReceiptMarkDrop = `DELETE FROM receipt_marks WHERE app_id = ? AND object_id = ?`
	cqlReceiptCountAdd = `UPDATE notification_counts SET value = value + ? WHERE app_id = ? AND object_id = ? AND device_type = ? AND what = 'arrivals'`
)

// receiptMarkTTL bounds how long a mark is kept when its record is never deleted: vendors
// repeat a receipt within hours, not weeks.
var receiptMarkTTL = ttlSeconds(30 * 24 * time.Hour)

// CountReceipts implements store.Store: one read of the devices' marks, a write of the new
// ones, then one counter update. Not one write as in store/pebble: two receipts of the same
// device racing each other may both count (vendors repeat a receipt minutes apart, not at
// once), and a crash between the marks and the counter loses those arrivals.
func (s *Store) CountReceipts(ctx context.Context, appID, pushID, channel string, deviceIDs []string, now time.Time) (int, error) {
	fail := func(err error) (int, error) {
		return 0, fmt.Errorf("cannot count %s receipts of push record %s of app %s: %w", channel, pushID, appID, err)
	}
	ids := make([]string, 0, len(deviceIDs))
	seen := make(map[string]bool, len(deviceIDs))
	for _, d := range deviceIDs {
		if d != "" && !seen[d] {
			seen[d] = true
			ids = append(ids, d)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := s.q(ctx, cqlNotifGetID, appID, pushID).Scan(new(string), new(time.Time)); errors.Is(err, gocql.ErrNotFound) {
		return 0, nil
	} else if err != nil {
		return fail(err)
	}
	it := s.q(ctx, cqlReceiptMarks, appID, pushID, channel, ids).Iter()
	var d string
	for it.Scan(&d) {
		seen[d] = false // marked before
	}
	if err := it.Close(); err != nil {
		return fail(err)
	}
	counted := 0
	for _, d := range ids {
		if !seen[d] {
			continue
		}
		if err := s.q(ctx, cqlReceiptMarkPut, appID, pushID, channel, d, receiptMarkTTL).Exec(); err != nil {
			return fail(err)
		}
		counted++
	}
	if counted == 0 {
		return 0, nil
	}
	if err := s.q(ctx, cqlReceiptCountAdd, int64(counted), appID, pushID, channel).Exec(); err != nil {
		return fail(err)
	}
	return counted, nil
}

// addReceiptCount adds a vendor channel's arrivals (a notification_counts row) into t.
func addReceiptCount(c push.Counts, channel, what string, value int64) {
	if what != "arrivals" {
		return
	}
	c.Add(push.Counts{channel: {Arrivals: value}})
}
