package cassandra

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const (
	cqlOfflineGet    = `SELECT state FROM offline_messages WHERE app_id = ? AND installation_id = ? AND msg_id = ?`
	cqlOfflineGetSeq = `SELECT state, seq FROM offline_messages WHERE app_id = ? AND installation_id = ? AND msg_id = ?`
	cqlOfflineList   = `SELECT msg_id, state, seq, doc FROM offline_messages WHERE app_id = ? AND installation_id = ?`
	cqlOfflineInsert = `INSERT INTO offline_messages (app_id, installation_id, msg_id, state, seq, doc) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	cqlOfflineDone   = `INSERT INTO offline_messages (app_id, installation_id, msg_id, state, seq, doc) VALUES (?, ?, ?, 2, 0, null) USING TTL ?`
	cqlOfflineDelete = `DELETE FROM offline_messages WHERE app_id = ? AND installation_id = ? AND msg_id = ?`

	offlineCached = 1
	offlineDone   = 2
)

// offlineTTL is the TTL of a cached message expiring at exp: its expiry (0: none, kept until
// acked or dropped past the bound; Cassandra needs a TTL, so a year).
func offlineTTL(exp int64, now time.Time) int {
	if exp == 0 {
		return ttlSeconds(365 * 24 * time.Hour)
	}
	return ttlSeconds(time.UnixMilli(exp).Sub(now))
}

// doneTTL is the TTL of a done row (store.DirectAckedKeep).
var doneTTL = ttlSeconds(store.DirectAckedKeep)

// The own channel's counts of a record are counters of notification_counts (device_type
// "direct"), not fields of its document: every device of a push adds to them at once.
const (
	cqlDirectCountAdd  = `UPDATE notification_counts SET value = value + ? WHERE app_id = ? AND object_id = ? AND device_type = 'direct' AND what = ?`
	cqlDirectCountList = `SELECT device_type, what, value FROM notification_counts WHERE app_id = ? AND object_id = ?`
	cqlDirectCountDrop = `DELETE FROM notification_counts WHERE app_id = ? AND object_id = ?`
)

// countDirect adds one to the own channel's count what (sent, expired, arrivals) of record id.
func (s *Store) countDirect(ctx context.Context, app, id, what string) error {
	return s.q(ctx, cqlDirectCountAdd, int64(1), app, id, what).Exec()
}

// withDirectCounts adds the own channel's counts of n into n.Counts, and the vendors' receipt
// arrivals (receipts.go), the partition's other rows.
func (s *Store) withDirectCounts(ctx context.Context, n *push.Notification) error {
	it := s.q(ctx, cqlDirectCountList, n.AppID, n.ObjectID).Iter()
	var (
		dt, what string
		value    int64
		t        push.Tally
		vendors  = push.Counts{}
	)
	for it.Scan(&dt, &what, &value) {
		if dt != push.ChannelDirect {
			addReceiptCount(vendors, dt, what, value)
			continue
		}
		switch what {
		case "sent":
			t.Sent = value
		case "expired":
			t.Expired = value
		case "arrivals":
			t.Arrivals = value
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cannot read the own-channel counts of push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	if !t.Equal(push.Tally{}) {
		if n.Counts == nil {
			n.Counts = push.Counts{}
		}
		n.Counts.Add(push.Counts{push.ChannelDirect: t})
	}
	if len(vendors) > 0 {
		if n.Counts == nil {
			n.Counts = push.Counts{}
		}
		n.Counts.Add(vendors)
	}
	return nil
}

// CacheDirect implements store.Store: an INSERT IF NOT EXISTS, then the record's counter. Not
// one write as in store/pebble: a crash between the two loses the message's count (never the
// message), and a timed-out counter update may count twice (Cassandra counters are not
// idempotent).
func (s *Store) CacheDirect(ctx context.Context, msg push.DirectMessage, now time.Time, limit int) (push.CacheOutcome, int, error) {
	app, iid := msg.AppID, msg.InstallationID
	fail := func(err error) (push.CacheOutcome, int, error) {
		return 0, 0, fmt.Errorf("cannot cache message %s for installation %s of app %s: %w", msg.ID, iid, app, err)
	}
	var state int
	err := s.q(ctx, cqlOfflineGet, app, iid, msg.ID).Scan(&state)
	if err == nil {
		return push.CacheDuplicate, 0, nil
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return fail(err)
	}
	if err := s.q(ctx, cqlNotifGetID, app, msg.ID).Scan(new(string), new(time.Time)); errors.Is(err, gocql.ErrNotFound) {
		return push.CacheCancelled, 0, nil
	} else if err != nil {
		return fail(err)
	}
	if msg.Expired(now) {
		if err := s.q(ctx, cqlOfflineDone, app, iid, msg.ID, doneTTL).Exec(); err != nil {
			return fail(err)
		}
		if err := s.countDirect(ctx, app, msg.ID, "expired"); err != nil {
			return fail(err)
		}
		return push.CacheExpired, 0, nil
	}
	cached, err := s.offlineList(ctx, app, iid)
	if err != nil {
		return fail(err)
	}
	dropped := 0
	msg.Seq = now.UnixNano()
	for _, m := range cached {
		msg.Seq = max(msg.Seq, m.Seq+1)
	}
	if limit > 0 && len(cached) >= limit {
		for _, m := range cached[:len(cached)-limit+1] {
			if err := s.q(ctx, cqlOfflineDelete, app, iid, m.ID).Exec(); err != nil {
				return fail(err)
			}
			dropped++
		}
	}
	doc, err := json.Marshal(&msg)
	if err != nil {
		return fail(err)
	}
	// Outcome unknown: applied if the row at SERIAL is cached with this message's sequence.
	ours := func(ctx context.Context, _ map[string]any) (casState, error) {
		var (
			state int
			seq   int64
		)
		found, err := s.serialRow(ctx, cqlOfflineGetSeq, []any{app, iid, msg.ID}, &state, &seq)
		return stateOf(found, state == offlineCached && seq == msg.Seq), err
	}
	applied, err := s.cas(ctx, s.q(ctx, cqlOfflineInsert, app, iid, msg.ID, offlineCached, msg.Seq, doc, offlineTTL(msg.Expires, now)),
		map[string]any{}, ours)
	if err != nil {
		return fail(err)
	}
	if !applied {
		return push.CacheDuplicate, dropped, nil
	}
	if err := s.countDirect(ctx, app, msg.ID, "sent"); err != nil {
		return fail(err)
	}
	return push.CacheStored, dropped, nil
}

// offlineList reads the installation's cached messages, oldest first (expired ones included).
func (s *Store) offlineList(ctx context.Context, app, iid string) ([]push.DirectMessage, error) {
	it := s.q(ctx, cqlOfflineList, app, iid).Iter()
	var (
		id    string
		state int
		seq   int64
		doc   []byte
		out   []push.DirectMessage
	)
	for it.Scan(&id, &state, &seq, &doc) {
		if state != offlineCached {
			continue
		}
		var m push.DirectMessage
		if err := json.Unmarshal(doc, &m); err != nil {
			_ = it.Close()
			return nil, err
		}
		out = append(out, m)
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b push.DirectMessage) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// OfflineMessages implements store.Store.
func (s *Store) OfflineMessages(ctx context.Context, appID, installationID string, now time.Time) ([]push.DirectMessage, error) {
	all, err := s.offlineList(ctx, appID, installationID)
	if err != nil {
		return nil, fmt.Errorf("cannot read the offline messages of installation %s of app %s: %w", installationID, appID, err)
	}
	out := all[:0]
	for _, m := range all {
		if !m.Expired(now) {
			out = append(out, m)
		}
	}
	return out, nil
}

// AckDirect implements store.Store: per id, the row turns done, then the record counts an
// arrival (two writes: a crash between them loses that arrival).
func (s *Store) AckDirect(ctx context.Context, appID, installationID string, ids []string, now time.Time) (int, error) {
	acked := 0
	for _, id := range ids {
		var state int
		err := s.q(ctx, cqlOfflineGet, appID, installationID, id).Scan(&state)
		if errors.Is(err, gocql.ErrNotFound) || (err == nil && state != offlineCached) {
			continue
		}
		if err != nil {
			return acked, fmt.Errorf("cannot ack message %s of installation %s of app %s: %w", id, installationID, appID, err)
		}
		if err := s.q(ctx, cqlOfflineDone, appID, installationID, id, doneTTL).Exec(); err != nil {
			return acked, fmt.Errorf("cannot ack message %s of installation %s of app %s: %w", id, installationID, appID, err)
		}
		if err := s.countDirect(ctx, appID, id, "arrivals"); err != nil {
			return acked, fmt.Errorf("cannot count the arrival of message %s of app %s: %w", id, appID, err)
		}
		acked++
	}
	return acked, nil
}
