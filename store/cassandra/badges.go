package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const (
	cqlBadgeGet    = `SELECT push_id, badge FROM installation_badges WHERE app_id = ? AND object_id = ?`
	cqlBadgeInsert = `INSERT INTO installation_badges (app_id, object_id, push_id, badge) VALUES (?, ?, ?, ?) USING TTL ?`
	cqlBadgeDelete = `DELETE FROM installation_badges WHERE app_id = ? AND object_id = ?`

	// A badge write keeps the installation's remaining TTL: a push is no app open.
	cqlInstInsertTTL    = cqlInstInsert + ` USING TTL ?`
	cqlBucketInsertTTL  = cqlBucketInsert + ` USING TTL ?`
	cqlChannelInsertTTL = cqlChannelInsert + ` USING TTL ?`

	cqlDeadGet    = `SELECT since FROM dead_tokens WHERE app_id = ? AND device_id = ?`
	cqlDeadInsert = `INSERT INTO dead_tokens (app_id, device_id, since) VALUES (?, ?, ?) USING TTL ?`
	cqlDeadDelete = `DELETE FROM dead_tokens WHERE app_id = ? AND device_id = ?`
)

// IncrementBadges implements store.Store: per installation, a read of the document and of its
// badge mark, then a logged batch of the rows with the new badge and the mark, each keeping the
// installation's remaining TTL. Like PutInstallation it is a read before a write: a PUT of the
// installation racing it on another node can lose its change or this badge.
func (s *Store) IncrementBadges(ctx context.Context, appID string, buckets int, pushID string, objectIDs []string, badges []int64) error {
	if len(badges) < len(objectIDs) {
		panic("BUG: IncrementBadges needs a badge slot per installation")
	}
	now := time.Now()
	for i, oid := range objectIDs {
		st, err := s.readInst(ctx, appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			badges[i] = 1
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
		var (
			markPush  string
			markBadge int64
		)
		err = s.q(ctx, cqlBadgeGet, appID, oid).Scan(&markPush, &markBadge)
		if err != nil && !errors.Is(err, gocql.ErrNotFound) {
			return fmt.Errorf("cannot read the badge mark of installation %s of app %s: %w", oid, appID, err)
		}
		if err == nil && markPush == pushID {
			badges[i] = markBadge
			continue
		}
		n := push.NextBadge(st.inst.Doc)
		badges[i] = n
		left := time.UnixMilli(st.inst.UpdatedAt).Add(push.InactiveAfter).Sub(now)
		if left < time.Second {
			continue // about to expire: nothing worth writing
		}
		ttl := ttlSeconds(left)
		in := &st.inst
		doc, err := push.WithBadge(in.Doc, n)
		if err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
		route := store.AppendRoute(nil, &in.Route)
		b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
		b.Query(cqlInstInsertTTL, appID, oid, st.bucket, in.DeviceType, route, in.CreatedAt, in.UpdatedAt, doc, ttl)
		b.Query(cqlBucketInsertTTL, appID, st.bucket, in.DeviceType, oid, route, doc, ttl)
		for _, ch := range in.Channels {
			b.Query(cqlChannelInsertTTL, appID, ch, st.bucket, in.DeviceType, oid, route, doc, ttl)
		}
		b.Query(cqlBadgeInsert, appID, oid, pushID, n, ttl)
		if err := s.s.ExecuteBatch(b); err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
	}
	return nil
}

// MarkDeadToken implements store.Store with the TTL left of push.DeadTokenWindow.
func (s *Store) MarkDeadToken(ctx context.Context, appID, deviceID string, since time.Time) error {
	left := time.Until(since.Add(push.DeadTokenWindow))
	if left < time.Second {
		return nil
	}
	if err := s.q(ctx, cqlDeadInsert, appID, deviceID, since.UnixMilli(), ttlSeconds(left)).Exec(); err != nil {
		return fmt.Errorf("cannot mark a dead token of app %s: %w", appID, err)
	}
	return nil
}

// DeadToken implements store.Store.
func (s *Store) DeadToken(ctx context.Context, appID, deviceID string) (time.Time, error) {
	var ms int64
	if err := s.q(ctx, cqlDeadGet, appID, deviceID).Scan(&ms); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return time.Time{}, err
		}
		return time.Time{}, fmt.Errorf("cannot read a dead-token mark of app %s: %w", appID, err)
	}
	return time.UnixMilli(ms), nil
}
