package pebble

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// maxBuckets is the most buckets an app can have: bucket numbers are 16 bits in keys.
const maxBuckets = 1 << 16

func checkBuckets(n int) error {
	if n <= 0 || n > maxBuckets || n&(n-1) != 0 {
		return fmt.Errorf("cannot use %d buckets: want a power of two up to %d", n, maxBuckets)
	}
	return nil
}

// deviceID is one entry of installations_by_device.
type deviceID struct {
	kind push.IDKind
	id   string
}

func deviceIDs(r *push.Route) []deviceID {
	out := make([]deviceID, 0, 3)
	if r.DeviceToken != "" {
		out = append(out, deviceID{push.KindToken, r.DeviceToken})
	}
	if r.InstallationID != "" {
		out = append(out, deviceID{push.KindIID, r.InstallationID})
	}
	if r.RegistrationID != "" {
		out = append(out, deviceID{push.KindRegID, r.RegistrationID})
	}
	return out
}

// stored is an installation as its primary row keeps it.
type stored struct {
	bucket int
	inst   push.Installation
}

func appendInstValue(dst []byte, bucket int, inst *push.Installation) []byte {
	dst = binary.AppendUvarint(dst, uint64(bucket))
	dst = store.AppendRoute(dst, &inst.Route)
	dst = binary.AppendVarint(dst, inst.CreatedAt)
	return append(dst, inst.Doc...)
}

func decodeInstValue(v []byte) (stored, error) {
	var st stored
	b, n := binary.Uvarint(v)
	if n <= 0 || b >= maxBuckets {
		return st, store.ErrBadRoute
	}
	st.bucket = int(b)
	v = v[n:]
	n, err := store.DecodeRoute(v, &st.inst.Route)
	if err != nil {
		return st, err
	}
	v = v[n:]
	c, n := binary.Varint(v)
	if n <= 0 {
		return st, store.ErrBadRoute
	}
	st.inst.CreatedAt = c
	st.inst.Doc = append([]byte(nil), v[n:]...)
	return st, nil
}

// readInst returns the stored installation, or store.ErrNotFound.
func (s *Store) readInst(appID, objectID string) (stored, error) {
	v, closer, err := s.db.Get(instKey(nil, appID, objectID))
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return stored{}, store.ErrNotFound
		}
		return stored{}, err
	}
	defer closer.Close()
	return decodeInstValue(v)
}

// GetInstallation implements store.Store.
func (s *Store) GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error) {
	if err := s.enter(); err != nil {
		return push.Installation{}, err
	}
	defer s.exit()
	st, err := s.readInst(appID, objectID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return push.Installation{}, err
		}
		return push.Installation{}, fmt.Errorf("cannot get installation %s of app %s: %w", objectID, appID, err)
	}
	return st.inst, nil
}

// LookupDevice implements store.Store.
func (s *Store) LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (string, error) {
	if err := s.enter(); err != nil {
		return "", err
	}
	defer s.exit()
	v, err := s.get(deviceKey(nil, appID, string(kind), deviceID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		return "", fmt.Errorf("cannot look up a %s of app %s: %w", kind, appID, err)
	}
	return string(v), nil
}

// PutInstallation implements store.Store: the document and every index in one synced batch,
// the previous version's index rows removed in the same batch.
func (s *Store) PutInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if inst.ObjectID == "" {
		return fmt.Errorf("cannot put an installation without objectId in app %s", appID)
	}
	if err := checkBuckets(buckets); err != nil {
		return err
	}
	ids := deviceIDs(&inst.Route)
	stripeIdx := make([]int, 0, 4)
	stripeIdx = append(stripeIdx, stripeOf("i", appID, inst.ObjectID))
	for _, d := range ids {
		stripeIdx = append(stripeIdx, stripeOf("d", appID, string(d.kind), d.id))
	}
	defer s.locks.lockAll(stripeIdx)()

	var key []byte
	for _, d := range ids {
		key = deviceKey(key[:0], appID, string(d.kind), d.id)
		v, ok, err := s.getInto(nil, key)
		if err != nil {
			return fmt.Errorf("cannot put installation %s of app %s: %w", inst.ObjectID, appID, err)
		}
		if ok && string(v) != inst.ObjectID {
			return fmt.Errorf("cannot put installation %s of app %s: %s: %w", inst.ObjectID, appID, d.kind, store.ErrDuplicate)
		}
	}
	old, err := s.readInst(appID, inst.ObjectID)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot read installation %s of app %s: %w", inst.ObjectID, appID, err)
	}

	b := s.db.NewBatch()
	defer b.Close()
	if found {
		if err := deleteInstRows(b, appID, &old); err != nil {
			return fmt.Errorf("cannot put installation %s of app %s: %w", inst.ObjectID, appID, err)
		}
	}
	if err := setInstRows(b, appID, push.Bucket(inst.ObjectID, buckets), &inst); err != nil {
		return fmt.Errorf("cannot put installation %s of app %s: %w", inst.ObjectID, appID, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot put installation %s of app %s: %w", inst.ObjectID, appID, err)
	}
	return nil
}

// setInstRows adds the primary row and every index row of inst to b.
func setInstRows(b *pebble.Batch, appID string, bucket int, inst *push.Installation) error {
	oid, dt := inst.ObjectID, inst.DeviceType
	if err := b.Set(instKey(nil, appID, oid), appendInstValue(nil, bucket, inst), nil); err != nil {
		return err
	}
	idx := store.AppendIndexValue(make([]byte, 0, 64+len(inst.Doc)), &inst.Route, inst.Doc)
	key := store.AppendCursor(bucketPrefix(nil, appID, bucket), dt, oid)
	if err := b.Set(key, idx, nil); err != nil {
		return err
	}
	for _, ch := range inst.Channels {
		key = store.AppendCursor(channelPrefix(key[:0], appID, ch, bucket), dt, oid)
		if err := b.Set(key, idx, nil); err != nil {
			return err
		}
	}
	for _, d := range deviceIDs(&inst.Route) {
		key = deviceKey(key[:0], appID, string(d.kind), d.id)
		if err := b.Set(key, []byte(oid), nil); err != nil {
			return err
		}
	}
	return b.Set(updatedKey(key[:0], appID, inst.UpdatedAt, oid), nil, nil)
}

// deleteInstRows adds deletions of the primary row and every index row of st to b.
func deleteInstRows(b *pebble.Batch, appID string, st *stored) error {
	oid, dt, bucket := st.inst.ObjectID, st.inst.DeviceType, st.bucket
	if err := b.Delete(instKey(nil, appID, oid), nil); err != nil {
		return err
	}
	key := store.AppendCursor(bucketPrefix(nil, appID, bucket), dt, oid)
	if err := b.Delete(key, nil); err != nil {
		return err
	}
	for _, ch := range st.inst.Channels {
		key = store.AppendCursor(channelPrefix(key[:0], appID, ch, bucket), dt, oid)
		if err := b.Delete(key, nil); err != nil {
			return err
		}
	}
	for _, d := range deviceIDs(&st.inst.Route) {
		key = deviceKey(key[:0], appID, string(d.kind), d.id)
		if err := b.Delete(key, nil); err != nil {
			return err
		}
	}
	return b.Delete(updatedKey(key[:0], appID, st.inst.UpdatedAt, oid), nil)
}

// DeleteInstallation implements store.Store.
func (s *Store) DeleteInstallation(ctx context.Context, appID string, buckets int, objectID string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("i", appID, objectID))()
	if err := s.deleteInst(appID, objectID, time.Time{}, pebble.Sync); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete installation %s of app %s: %w", objectID, appID, err)
	}
	return nil
}

// deleteInst removes an installation and its index rows; with a non-zero cutoff only when it
// was last updated before cutoff (errSkip otherwise). The caller holds its stripe.
func (s *Store) deleteInst(appID, objectID string, cutoff time.Time, wo *pebble.WriteOptions) error {
	st, err := s.readInst(appID, objectID)
	if err != nil {
		return err
	}
	if !cutoff.IsZero() && st.inst.UpdatedAt >= cutoff.UnixMilli() {
		return errSkip
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := deleteInstRows(b, appID, &st); err != nil {
		return err
	}
	return b.Commit(wo)
}

var errSkip = errors.New("skipped")

// DeleteInactive implements store.Store over the updatedAt index.
func (s *Store) DeleteInactive(ctx context.Context, appID string, buckets int, cutoff time.Time, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if limit <= 0 {
		return 0, nil
	}
	prefix := updatedPrefix(nil, appID)
	upper := appendInt64(append([]byte(nil), prefix...), cutoff.UnixMilli())
	var oids []string
	err := s.iterate(prefix, upper, func(k, _ []byte) error {
		if len(k) < len(prefix)+8 {
			return store.ErrBadKey
		}
		oid, _, err := store.DecodeKeyString(k[len(prefix)+8:])
		if err != nil {
			return err
		}
		oids = append(oids, oid)
		if len(oids) >= limit {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, fmt.Errorf("cannot list inactive installations of app %s: %w", appID, err)
	}
	n := 0
	for _, oid := range oids {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		unlock := s.locks.lock(stripeOf("i", appID, oid))
		err := s.deleteInst(appID, oid, cutoff, pebble.NoSync)
		unlock()
		switch err {
		case nil:
			n++
		case errSkip, store.ErrNotFound:
		default:
			return n, fmt.Errorf("cannot delete inactive installation %s of app %s: %w", oid, appID, err)
		}
	}
	if n > 0 {
		// One WAL sync makes every deletion above durable.
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return n, fmt.Errorf("cannot sync deletions of inactive installations of app %s: %w", appID, err)
		}
	}
	return n, nil
}

var errStop = errors.New("stop")
