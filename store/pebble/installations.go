package pebble

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
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

// stored is an installation as its primary row keeps it.
type stored struct {
	bucket int
	inst   push.Installation
	docOff int // where the document starts in the row's value
}

func appendInstValue(dst []byte, bucket int, inst *push.Installation) []byte {
	dst = binary.AppendUvarint(dst, uint64(bucket))
	dst = store.AppendRoute(dst, &inst.Route)
	dst = binary.AppendVarint(dst, inst.CreatedAt)
	return append(dst, inst.Doc...)
}

func decodeInstValue(v []byte) (stored, error) {
	st, err := decodeInstHead(v)
	if err != nil {
		return st, err
	}
	st.inst.Doc = append([]byte(nil), v[st.docOff:]...)
	return st, nil
}

// decodeInstHead decodes a primary row up to its document, which starts at st.docOff.
func decodeInstHead(v []byte) (stored, error) {
	var st stored
	whole := len(v)
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
	st.docOff = whole - len(v) + n
	return st, nil
}

// readInst returns the stored installation, or store.ErrNotFound, for a writer of it: a row
// read from Pebble does not fill the installation cache, since the writer's commit sets or
// forgets the row there right after (learnRows, forgetRows).
func (s *Store) readInst(appID, objectID string) (stored, error) {
	return s.readInstWith(appID, objectID, decodeInstValue, false)
}

// readInstRoute is readInst without the document (stored.inst.Doc stays nil), for writers
// that only need the previous version's keys.
func (s *Store) readInstRoute(appID, objectID string) (stored, error) {
	return s.readInstWith(appID, objectID, decodeInstHead, false)
}

// readInstWith decodes the primary row of objectID with decode (which copies what it keeps),
// from the installation cache or from Pebble, which then fills the cache when fill says so.
func (s *Store) readInstWith(appID, objectID string, decode func([]byte) (stored, error), fill bool) (stored, error) {
	var buf [128]byte
	key := instKey(buf[:0], appID, objectID)
	var gen uint64
	if s.insts != nil {
		v, g, ok := s.insts.get(key) // a copy: the cache rewrites its ring
		if ok {
			return decode(v)
		}
		gen = g
	}
	v, closer, err := s.db.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return stored{}, store.ErrNotFound
		}
		return stored{}, err
	}
	defer closer.Close()
	if fill && s.insts != nil {
		s.insts.fill(key, v, gen) // copied into the cache's ring
	}
	return decode(v)
}

// GetInstallation implements store.Store.
func (s *Store) GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error) {
	if err := s.enter(); err != nil {
		return push.Installation{}, err
	}
	defer s.exit()
	// A reader fills the cache: the upsert that reads the installation here writes it next,
	// and the store's read of the route under the stripes then finds it there.
	st, err := s.readInstWith(appID, objectID, decodeInstValue, true)
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
	var buf [128]byte
	key := deviceKey(buf[:0], appID, string(kind), deviceID)
	var gen uint64
	if s.devices != nil {
		oid, g, ok := s.devices.get(key)
		if ok {
			if oid == "" {
				return "", store.ErrNotFound
			}
			return oid, nil
		}
		gen = g
	}
	v, closer, err := s.db.Get(key)
	var oid string
	switch {
	case err == nil:
		oid = string(v)
		_ = closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
		// Remembered too: an upsert of a new device looks its id up, then reads the row again
		// under its stripe to refuse a duplicate (putInstBatch).
	default:
		return "", fmt.Errorf("cannot look up a %s of app %s: %w", kind, appID, err)
	}
	if s.afterDeviceRead != nil {
		s.afterDeviceRead()
	}
	if s.devices != nil {
		s.devices.fill(key, oid, gen)
	}
	if oid == "" {
		return "", store.ErrNotFound
	}
	return oid, nil
}

// PutInstallation implements store.Store: the document and every index in one batch, the
// previous version's index rows that the new version does not overwrite removed in the same
// batch. Rows whose key and value are unchanged (device ids, an unchanged updatedAt row) are
// not rewritten. The batch is committed synced under the stripes (commitUnlockSync).
func (s *Store) PutInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error {
	return s.putInstallation(appID, buckets, inst, false)
}

// PutNewInstallation is PutInstallation for an installation whose objectId the caller has
// just generated (96 random bits, so no stored version can exist): it skips the read of the
// stored version, a point lookup that misses every memtable and level. The new device ids
// are still read, so one that belongs to another installation is refused (store.ErrDuplicate).
func (s *Store) PutNewInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error {
	return s.putInstallation(appID, buckets, inst, true)
}

func (s *Store) putInstallation(appID string, buckets int, inst push.Installation, isNew bool) error {
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
	ids := inst.Route.DeviceIDs()
	var stripeBuf [4]int
	stripeIdx := append(stripeBuf[:0], stripeOf("i", appID, inst.ObjectID))
	for _, d := range ids {
		stripeIdx = append(stripeIdx, stripeOf("d", appID, string(d.Kind), d.ID))
	}
	unlock := s.locks.lockAll(stripeIdx)
	w := s.absence.begin(appID)
	defer w.end() // after the commit
	b, err := s.putInstBatch(w, appID, buckets, &inst, ids, isNew)
	if err != nil {
		unlock()
		return fmt.Errorf("cannot put installation %s of app %s: %w", inst.ObjectID, appID, err)
	}
	defer b.Close()
	// The device cache learns the rows under their stripes: the next upsert of this device
	// (the app opened again) finds its installation without a read.
	if err := s.commitUnlockSync(b, unlock); err != nil {
		return fmt.Errorf("cannot put installation %s of app %s: %w", inst.ObjectID, appID, err)
	}
	return nil
}

// putInstBatch checks inst's device ids and builds the batch that replaces the stored version
// of inst (if any). The caller holds the stripes of inst and of its device ids.
//
// A device id the stored version already has needs no read: its row points at inst, because
// every write and delete changes an installation's route and its device rows in one batch
// under these stripes. Only a new id's row is read, to refuse one that belongs to another
// installation. A refresh with the same ids (the usual upsert) reads just the stored route;
// isNew (an objectId just generated) skips that read too.
func (s *Store) putInstBatch(w *rowsWrite, appID string, buckets int, inst *push.Installation, ids []push.DeviceRef, isNew bool) (*pebble.Batch, error) {
	var old stored
	err := store.ErrNotFound
	if !isNew {
		old, err = s.readInstRoute(appID, inst.ObjectID)
	}
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("cannot read the stored version: %w", err)
	}
	var oldIDs []push.DeviceRef
	if found {
		oldIDs = old.inst.Route.DeviceIDs()
	}
	// owned[i]: the device row of ids[i] already points at inst, so it need not be rewritten.
	var ownedBuf [3]bool
	owned := ownedBuf[:len(ids)]
	var key []byte
	var v [64]byte
	for i, d := range ids {
		if slices.Contains(oldIDs, d) {
			owned[i] = true
			continue
		}
		key = deviceKey(key[:0], appID, string(d.Kind), d.ID)
		holder, ok, err := s.deviceHolder(key, v[:0])
		if err != nil {
			return nil, err
		}
		if ok && holder != inst.ObjectID {
			return nil, fmt.Errorf("%s: %w", d.Kind, store.ErrDuplicate)
		}
		owned[i] = ok
	}
	b := s.db.NewBatch()
	if err := putInstRows(w, b, appID, push.Bucket(inst.ObjectID, buckets), inst, ids, owned, old, found); err != nil {
		_ = b.Close()
		return nil, err
	}
	// A device id the installation gains was registered again: forget that it was dead (an
	// app that holds no mark has none to forget: deadApps).
	marks := s.dead.has(appID)
	for i, d := range ids {
		if owned[i] || !marks {
			continue
		}
		key = deadKey(key[:0], appID, d.ID)
		if err := b.Delete(key, nil); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	return b, nil
}

// deviceHolder returns the object id that the device row key holds (ok false: none), from the
// device cache or from Pebble (read into buf). The caller holds the row's stripe, so what the
// cache says is what the last writer of the row left (rowcache.go).
func (s *Store) deviceHolder(key, buf []byte) (oid string, ok bool, err error) {
	if s.devices != nil {
		if oid, _, hit := s.devices.get(key); hit {
			return oid, oid != "", nil
		}
	}
	v, ok, err := s.getInto(buf, key)
	return string(v), ok, err
}

// putInstRows adds to b the rows of inst and the deletions of old's rows that inst's do not
// overwrite (when found). A row whose key and value are both unchanged is left alone: device
// rows already pointing at inst (owned[i] for ids[i]) and the inactivity-index row when
// updatedAt stayed within its hour (updatedSlot). by_bucket and by_channel rows carry the
// document, so they are always rewritten.
//
// w is the caller's count-in as a writer of appID's index rows (absence): it must end after b
// is committed or dropped.
func putInstRows(w *rowsWrite, b *pebble.Batch, appID string, bucket int, inst *push.Installation, ids []push.DeviceRef, owned []bool, old stored, found bool) error {
	if w == nil || w.app != appID {
		return fmt.Errorf("internal error: index rows of app %s written without counting in as their writer", appID)
	}
	oid, dt := inst.ObjectID, inst.DeviceType
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	key, val := sc.key[:0], sc.val[:0]
	defer func() {
		if cap(val) <= 64<<10 { // keep what grew, within reason
			sc.key, sc.val = key[:0], val[:0]
		}
	}()
	val = appendInstValue(val, bucket, inst)
	if err := b.Set(instKey(key, appID, oid), val, nil); err != nil {
		return err
	}
	if found {
		sameIdx := old.bucket == bucket && old.inst.DeviceType == dt
		if !sameIdx {
			key = store.AppendCursor(bucketPrefix(key[:0], appID, old.bucket), old.inst.DeviceType, oid)
			if err := b.Delete(key, nil); err != nil {
				return err
			}
		}
		for _, ch := range old.inst.Channels {
			if sameIdx && slices.Contains(inst.Channels, ch) {
				continue // overwritten below
			}
			key = store.AppendCursor(channelPrefix(key[:0], appID, ch, old.bucket), old.inst.DeviceType, oid)
			if err := b.Delete(key, nil); err != nil {
				return err
			}
		}
		for _, d := range old.inst.Route.DeviceIDs() {
			if slices.Contains(ids, d) {
				continue // kept (and owned) or set below
			}
			key = deviceKey(key[:0], appID, string(d.Kind), d.ID)
			if err := b.Delete(key, nil); err != nil {
				return err
			}
		}
		if updatedSlot(old.inst.UpdatedAt) != updatedSlot(inst.UpdatedAt) {
			key = updatedKey(key[:0], appID, old.inst.UpdatedAt, oid)
			if err := b.Delete(key, nil); err != nil {
				return err
			}
		}
	}
	val = store.AppendIndexValue(val[:0], &inst.Route, inst.Doc)
	key = store.AppendCursor(bucketPrefix(key[:0], appID, bucket), dt, oid)
	if err := b.Set(key, val, nil); err != nil {
		return err
	}
	for _, ch := range inst.Channels {
		key = store.AppendCursor(channelPrefix(key[:0], appID, ch, bucket), dt, oid)
		if err := b.Set(key, val, nil); err != nil {
			return err
		}
	}
	for i, d := range ids {
		if owned[i] {
			continue
		}
		key = deviceKey(key[:0], appID, string(d.Kind), d.ID)
		if err := b.Set(key, []byte(oid), nil); err != nil {
			return err
		}
	}
	if found && updatedSlot(old.inst.UpdatedAt) == updatedSlot(inst.UpdatedAt) {
		return nil // refreshed within the hour: the row stays as it is
	}
	return b.Set(updatedKey(key[:0], appID, inst.UpdatedAt, oid), nil, nil)
}

// scratch holds the key and value buffers of one putInstRows call; Batch.Set copies both,
// so they are reused across calls.
type scratch struct{ key, val []byte }

var scratchPool = sync.Pool{New: func() any { return &scratch{key: make([]byte, 0, 128), val: make([]byte, 0, 1024)} }}

// setInstRows adds the primary row and every index row of inst to b.
func setInstRows(w *rowsWrite, b *pebble.Batch, appID string, bucket int, inst *push.Installation) error {
	ids := inst.Route.DeviceIDs()
	return putInstRows(w, b, appID, bucket, inst, ids, make([]bool, len(ids)), stored{}, false)
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
	for _, d := range st.inst.Route.DeviceIDs() {
		key = deviceKey(key[:0], appID, string(d.Kind), d.ID)
		if err := b.Delete(key, nil); err != nil {
			return err
		}
	}
	if err := b.Delete(badgeKey(key[:0], appID, oid), nil); err != nil {
		return err
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
	if err := s.deleteInst(appID, objectID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete installation %s of app %s: %w", objectID, appID, err)
	}
	return nil
}

// deleteInst removes an installation and its index rows, durably. The caller holds its stripe.
func (s *Store) deleteInst(appID, objectID string) error {
	st, err := s.readInst(appID, objectID)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := deleteInstRows(b, appID, &st); err != nil {
		return err
	}
	if err := deletePresence(b, appID, st.inst.InstallationID); err != nil {
		return err
	}
	err = b.Commit(pebble.Sync)
	s.forgetRows(b)
	return err
}

// DeleteInactive implements store.Store over the inactivity index, whose rows are keyed by the
// hour of updatedAt: it removes installations last updated before the start of cutoff's hour, so
// one updated in that hour but before cutoff goes at a later call (the sweeper runs hourly).
// Every index row it lists is deleted: with its installation when that is inactive; alone when
// the installation is gone or was refreshed since (a row left behind, such as one written with
// the exact updatedAt before the index was kept by the hour). So each pass makes progress and
// rows do not pile up.
func (s *Store) DeleteInactive(ctx context.Context, appID string, buckets int, cutoff time.Time, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if limit <= 0 {
		return 0, nil
	}
	prefix := updatedPrefix(nil, appID)
	upper := appendInt64(append([]byte(nil), prefix...), updatedSlot(cutoff.UnixMilli()))
	type row struct {
		key []byte
		oid string
	}
	n, wrote := 0, false
	for n < limit {
		var rows []row
		err := s.iterate(prefix, upper, func(k, _ []byte) error {
			if len(k) < len(prefix)+8 {
				return store.ErrBadKey
			}
			oid, _, err := store.DecodeKeyString(k[len(prefix)+8:])
			if err != nil {
				return err
			}
			rows = append(rows, row{key: append([]byte(nil), k...), oid: oid})
			if len(rows) >= limit-n {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return n, fmt.Errorf("cannot list inactive installations of app %s: %w", appID, err)
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			unlock := s.locks.lock(stripeOf("i", appID, r.oid))
			deleted, err := s.sweepInactive(appID, r.oid, r.key, cutoff)
			unlock()
			if err != nil {
				return n, fmt.Errorf("cannot delete inactive installation %s of app %s: %w", r.oid, appID, err)
			}
			wrote = true
			if deleted {
				n++
			}
		}
	}
	if wrote {
		// One WAL sync makes every deletion above durable.
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return n, fmt.Errorf("cannot sync deletions of inactive installations of app %s: %w", appID, err)
		}
	}
	return n, nil
}

// sweepInactive handles the inactivity-index row rowKey of installation oid: deletes the
// installation (and reports true) when it was last updated before cutoff, and the row in any
// case. The caller holds the installation's stripe.
func (s *Store) sweepInactive(appID, oid string, rowKey []byte, cutoff time.Time) (bool, error) {
	st, err := s.readInst(appID, oid)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	inactive := err == nil && st.inst.UpdatedAt < cutoff.UnixMilli()
	if inactive {
		if err := deleteInstRows(b, appID, &st); err != nil {
			return false, err
		}
		if err := deletePresence(b, appID, st.inst.InstallationID); err != nil {
			return false, err
		}
	}
	if err := b.Delete(rowKey, nil); err != nil {
		return false, err
	}
	err = b.Commit(pebble.NoSync)
	s.forgetRows(b)
	return inactive, err
}

var errStop = errors.New("stop")
