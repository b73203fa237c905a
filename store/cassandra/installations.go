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
	cqlInstGet    = `SELECT bucket, route, created_at, doc FROM installations WHERE app_id = ? AND object_id = ?`
	cqlInstInsert = `INSERT INTO installations (app_id, object_id, bucket, device_type, route, created_at, updated_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	cqlInstDelete = `DELETE FROM installations WHERE app_id = ? AND object_id = ?`

	cqlBucketInsert = `INSERT INTO installations_by_bucket (app_id, bucket, device_type, object_id, route, doc) VALUES (?, ?, ?, ?, ?, ?)`
	cqlBucketDelete = `DELETE FROM installations_by_bucket WHERE app_id = ? AND bucket = ? AND device_type = ? AND object_id = ?`

	cqlChannelInsert = `INSERT INTO installations_by_channel (app_id, channel, bucket, device_type, object_id, route, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`
	cqlChannelDelete = `DELETE FROM installations_by_channel WHERE app_id = ? AND channel = ? AND bucket = ? AND device_type = ? AND object_id = ?`

	cqlDeviceGet    = `SELECT object_id FROM installations_by_device WHERE app_id = ? AND kind = ? AND device_id = ?`
	cqlDeviceInsert = `INSERT INTO installations_by_device (app_id, kind, device_id, object_id) VALUES (?, ?, ?, ?)`
	cqlDeviceDelete = `DELETE FROM installations_by_device WHERE app_id = ? AND kind = ? AND device_id = ?`

	// Scans: the whole partition, from a cursor, or one device type's clustering range.
	cqlScanBucket        = `SELECT route, doc, device_type, object_id FROM installations_by_bucket WHERE app_id = ? AND bucket = ?`
	cqlScanBucketAfter   = cqlScanBucket + ` AND (device_type, object_id) > (?, ?)`
	cqlScanBucketDT      = cqlScanBucket + ` AND device_type = ?`
	cqlScanBucketDTAfter = cqlScanBucket + ` AND device_type = ? AND object_id > ?`

	cqlScanChannel        = `SELECT route, doc, device_type, object_id FROM installations_by_channel WHERE app_id = ? AND channel = ? AND bucket = ?`
	cqlScanChannelAfter   = cqlScanChannel + ` AND (device_type, object_id) > (?, ?)`
	cqlScanChannelDT      = cqlScanChannel + ` AND device_type = ?`
	cqlScanChannelDTAfter = cqlScanChannel + ` AND device_type = ? AND object_id > ?`

	cqlInactiveCandidates = `SELECT object_id, route FROM installations_by_bucket WHERE app_id = ? AND bucket = ?`
)

// scanPageSize is how many rows one Cassandra page carries (~300 KB of ~300-byte rows).
const scanPageSize = 1000

type stored struct {
	bucket int
	inst   push.Installation
}

func (s *Store) readInst(ctx context.Context, appID, objectID string) (stored, error) {
	var (
		st    stored
		route []byte
	)
	err := s.q(ctx, cqlInstGet, appID, objectID).Scan(&st.bucket, &route, &st.inst.CreatedAt, &st.inst.Doc)
	if err != nil {
		return st, notFound(err)
	}
	if _, err := store.DecodeRoute(route, &st.inst.Route); err != nil {
		return st, err
	}
	return st, nil
}

// GetInstallation implements store.Store.
func (s *Store) GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error) {
	st, err := s.readInst(ctx, appID, objectID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return push.Installation{}, fmt.Errorf("cannot get installation %s of app %s: %w", objectID, appID, err)
	}
	return st.inst, err
}

// LookupDevice implements store.Store.
func (s *Store) LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (string, error) {
	var oid string
	if err := s.q(ctx, cqlDeviceGet, appID, string(kind), deviceID).Scan(&oid); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		return "", fmt.Errorf("cannot look up a %s of app %s: %w", kind, appID, err)
	}
	return oid, nil
}

// PutInstallation implements store.Store: the old version's index rows that change are deleted
// and the new rows inserted in one logged batch. A device id the stored version does not hold
// is first claimed with an LWT on its installations_by_device row (INSERT IF NOT EXISTS), so
// two nodes racing for one new token cannot both win: the loser gets store.ErrDuplicate and
// releases the ids it claimed. A timed-out claim is read again at SERIAL before deciding.
// Rows an LWT just wrote are not rewritten in the batch (an LWT row is not mixed with plain
// writes of the same statement); rows of ids the installation keeps are, to refresh their TTL,
// and so is a row found ours already (a claim a failed put left, its TTL running since).
func (s *Store) PutInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error {
	if inst.ObjectID == "" {
		return fmt.Errorf("cannot put an installation without objectId in app %s", appID)
	}
	if buckets <= 0 || buckets&(buckets-1) != 0 {
		return fmt.Errorf("cannot use %d buckets: want a power of two", buckets)
	}
	oid := inst.ObjectID
	old, err := s.readInst(ctx, appID, oid)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot read installation %s of app %s: %w", oid, appID, err)
	}
	var oldIDs []push.DeviceRef
	if found {
		oldIDs = old.inst.Route.DeviceIDs()
	}
	var claimed, written []push.DeviceRef // ids held for this put; rows its LWTs wrote
	for _, d := range inst.Route.DeviceIDs() {
		if containsID(oldIDs, d) {
			continue
		}
		out, err := s.claimDevice(ctx, appID, d, oid)
		if err == nil && out == claimLost {
			err = fmt.Errorf("%s: %w", d.Kind, store.ErrDuplicate)
		}
		if err != nil {
			if out == claimUnknown {
				// Not even the SERIAL read answered: the claim may have applied. The
				// release is conditional on oid, so giving it back too is safe.
				claimed = append(claimed, d)
			}
			return s.releaseAfter(ctx, appID, claimed, oid, fmt.Errorf("cannot put installation %s of app %s: %w", oid, appID, err))
		}
		claimed = append(claimed, d)
		if out == claimWritten {
			written = append(written, d)
		}
	}
	bucket := push.Bucket(oid, buckets)
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	// Delete only rows the new version does not rewrite: in one batch a delete and an insert
	// of the same row share a timestamp, and the delete would win.
	if found {
		o := &old.inst
		sameKey := o.DeviceType == inst.DeviceType && old.bucket == bucket
		if !sameKey {
			b.Query(cqlBucketDelete, appID, old.bucket, o.DeviceType, oid)
		}
		for _, ch := range o.Channels {
			if !sameKey || !contains(inst.Channels, ch) {
				b.Query(cqlChannelDelete, appID, ch, old.bucket, o.DeviceType, oid)
			}
		}
		newIDs := inst.Route.DeviceIDs()
		for _, d := range o.Route.DeviceIDs() {
			if !containsID(newIDs, d) {
				b.Query(cqlDeviceDelete, appID, string(d.Kind), d.ID)
			}
		}
	}
	// A device id the installation gains was registered again: forget that it was dead.
	for _, d := range inst.Route.DeviceIDs() {
		if !found || !containsID(old.inst.Route.DeviceIDs(), d) {
			b.Query(cqlDeadDelete, appID, d.ID)
		}
	}
	route := store.AppendRoute(nil, &inst.Route)
	b.Query(cqlInstInsert, appID, oid, bucket, inst.DeviceType, route, inst.CreatedAt, inst.UpdatedAt, inst.Doc)
	b.Query(cqlBucketInsert, appID, bucket, inst.DeviceType, oid, route, inst.Doc)
	for _, ch := range inst.Channels {
		b.Query(cqlChannelInsert, appID, ch, bucket, inst.DeviceType, oid, route, inst.Doc)
	}
	for _, d := range inst.Route.DeviceIDs() {
		if !containsID(written, d) {
			b.Query(cqlDeviceInsert, appID, string(d.Kind), d.ID, oid)
		}
	}
	if err := s.s.ExecuteBatch(b); err != nil {
		werr := fmt.Errorf("cannot put installation %s of app %s: %w", oid, appID, err)
		// A logged batch whose outcome is unknown (a timeout, no answer) may be in the batch
		// log and apply later: its claims stay, for releasing them would leave the written
		// installation's ids free for another. Any other failure applied nothing: the claims
		// are given back.
		if casUnknown(err) {
			return werr
		}
		return s.releaseAfter(ctx, appID, claimed, oid, werr)
	}
	return nil
}

const (
	cqlDeviceClaim   = `INSERT INTO installations_by_device (app_id, kind, device_id, object_id) VALUES (?, ?, ?, ?) IF NOT EXISTS`
	cqlDeviceRelease = `DELETE FROM installations_by_device WHERE app_id = ? AND kind = ? AND device_id = ? IF object_id = ?`
)

// claimOutcome is what claimDevice found.
type claimOutcome int

const (
	claimLost    claimOutcome = iota // another installation holds the id
	claimWritten                     // the LWT wrote the row for oid
	claimHeld                        // the row named oid already (a claim a failed put left)
	claimUnknown                     // with an error: the outcome is unknown, the claim may have applied
)

// claimDevice takes d's index row for oid with an LWT. A claim whose outcome is unknown (a
// timeout) is decided by cas's read at SERIAL: the row names oid (written), another
// installation (lost), or nothing (the claim failed: the timeout is returned, not a
// duplicate). When that read fails too, the outcome is claimUnknown.
func (s *Store) claimDevice(ctx context.Context, appID string, d push.DeviceRef, oid string) (claimOutcome, error) {
	key := []any{appID, string(d.Kind), d.ID}
	decided := false
	owner := func(ctx context.Context, prev map[string]any) (casState, error) {
		var o string
		found, err := s.serialRow(ctx, cqlDeviceGet, key, &o)
		if found {
			prev["object_id"] = o
		}
		decided = err == nil
		return stateOf(found, o == oid), err
	}
	prev := map[string]any{}
	applied, err := s.cas(ctx, s.q(ctx, cqlDeviceClaim, appID, string(d.Kind), d.ID, oid), prev, owner)
	switch {
	case err != nil && casUnknown(err) && !decided:
		return claimUnknown, fmt.Errorf("cannot claim a %s: %w", d.Kind, err)
	case err != nil:
		return claimLost, fmt.Errorf("cannot claim a %s: %w", d.Kind, err)
	case applied:
		return claimWritten, nil
	}
	if o, _ := prev["object_id"].(string); o == oid {
		return claimHeld, nil
	}
	return claimLost, nil
}

// releaseDevices gives back the rows claimDevice took for oid when the write fails later; the
// condition leaves alone a row another installation holds meanwhile. It runs even when ctx is
// done (the driver's timeout bounds it): a deadline that failed the write must not keep the
// claims. A release whose outcome is unknown is decided at SERIAL (the row no longer ours).
func (s *Store) releaseDevices(ctx context.Context, appID string, ids []push.DeviceRef, oid string) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, d := range ids {
		key := []any{appID, string(d.Kind), d.ID}
		released := func(ctx context.Context, _ map[string]any) (casState, error) {
			var o string
			found, err := s.serialRow(ctx, cqlDeviceGet, key, &o)
			if found && o == oid {
				return casNone, err // still ours: the release failed
			}
			return casMine, err
		}
		if _, err := s.cas(ctx, s.q(ctx, cqlDeviceRelease, appID, string(d.Kind), d.ID, oid), map[string]any{}, released); err != nil {
			errs = append(errs, fmt.Errorf("cannot release a %s: %w", d.Kind, err))
		}
	}
	return errors.Join(errs...)
}

// releaseAfter is err of a failed put, with the failure to give back its claims if any.
func (s *Store) releaseAfter(ctx context.Context, appID string, ids []push.DeviceRef, oid string, err error) error {
	if rerr := s.releaseDevices(ctx, appID, ids, oid); rerr != nil {
		return fmt.Errorf("%w (and its claimed ids stay: %v)", err, rerr)
	}
	return err
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func containsID(xs []push.DeviceRef, x push.DeviceRef) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// deleteStored removes an installation, its index rows and its presence (DeleteInstallation,
// DeleteInactive).
func (s *Store) deleteStored(ctx context.Context, appID string, st *stored) error {
	o, oid := &st.inst, st.inst.ObjectID
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(cqlInstDelete, appID, oid)
	b.Query(cqlBadgeDelete, appID, oid)
	b.Query(cqlBucketDelete, appID, st.bucket, o.DeviceType, oid)
	for _, ch := range o.Channels {
		b.Query(cqlChannelDelete, appID, ch, st.bucket, o.DeviceType, oid)
	}
	for _, d := range o.Route.DeviceIDs() {
		b.Query(cqlDeviceDelete, appID, string(d.Kind), d.ID)
	}
	if iid := o.InstallationID; iid != "" { // its own-channel presence (presence.go)
		b.Query(cqlPresenceConnsDrop, appID, iid)
		b.Query(cqlPresenceDrop, appID, iid)
	}
	return s.s.ExecuteBatch(b)
}

// DeleteInstallation implements store.Store.
func (s *Store) DeleteInstallation(ctx context.Context, appID string, buckets int, objectID string) error {
	st, err := s.readInst(ctx, appID, objectID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete installation %s of app %s: %w", objectID, appID, err)
	}
	if err := s.deleteStored(ctx, appID, &st); err != nil {
		return fmt.Errorf("cannot delete installation %s of app %s: %w", objectID, appID, err)
	}
	return nil
}

// Scan implements store.Store, one partition page by page. Route strings alias a buffer
// reused per row; Doc is the driver's copy.
func (s *Store) Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) error {
	stmt, args, ok, err := scanQuery(r)
	if err != nil || !ok {
		return err
	}
	it := s.q(ctx, stmt, args...).PageSize(scanPageSize).Iter()
	var (
		route   push.Route
		row     = store.Row{Route: &route}
		rb, doc []byte
		dt, oid string
		fnErr   error
	)
	for it.Scan(&rb, &doc, &dt, &oid) {
		if _, err := store.DecodeRouteAlias(rb, &route); err != nil {
			fnErr = fmt.Errorf("cannot decode a row of bucket %d of app %s: %w", r.Bucket, r.AppID, err)
			break
		}
		row.Doc = doc
		row.Cursor = store.AppendCursor(nil, dt, oid)
		if fnErr = fn(&row); fnErr != nil {
			break
		}
	}
	if err := it.Close(); err != nil && fnErr == nil {
		return fmt.Errorf("cannot scan bucket %d of app %s: %w", r.Bucket, r.AppID, err)
	}
	return fnErr
}

// scanQuery picks the statement for r; ok=false means the range is empty.
func scanQuery(r store.ScanRange) (stmt string, args []any, ok bool, err error) {
	base := []any{r.AppID}
	plain, after, dtq, dtAfter := cqlScanBucket, cqlScanBucketAfter, cqlScanBucketDT, cqlScanBucketDTAfter
	if r.Channel != "" {
		base = append(base, r.Channel)
		plain, after, dtq, dtAfter = cqlScanChannel, cqlScanChannelAfter, cqlScanChannelDT, cqlScanChannelDTAfter
	}
	base = append(base, r.Bucket)
	var cdt, coid string
	if len(r.After) > 0 {
		if cdt, coid, err = store.DecodeCursor(r.After); err != nil {
			return "", nil, false, fmt.Errorf("cannot scan bucket %d of app %s: bad cursor: %w", r.Bucket, r.AppID, err)
		}
	}
	switch {
	case r.DeviceType == "" && len(r.After) == 0:
		return plain, base, true, nil
	case r.DeviceType == "":
		return after, append(base, cdt, coid), true, nil
	case len(r.After) == 0 || cdt < r.DeviceType:
		return dtq, append(base, r.DeviceType), true, nil
	case cdt == r.DeviceType:
		return dtAfter, append(base, r.DeviceType, coid), true, nil
	default: // the cursor is past this device type's range
		return "", nil, false, nil
	}
}

// DeleteInactive implements store.Store. Cassandra expires installations by TTL 90 days after
// their last write; this sweep serves callers that judge inactivity by UpdatedAt (the contract
// suite, imports of old data): it scans the app's buckets and deletes what is older than cutoff.
func (s *Store) DeleteInactive(ctx context.Context, appID string, buckets int, cutoff time.Time, limit int) (int, error) {
	n := 0
	cut := cutoff.UnixMilli()
	var route push.Route
	for b := 0; b < buckets && n < limit; b++ {
		it := s.q(ctx, cqlInactiveCandidates, appID, b).PageSize(scanPageSize).Iter()
		var (
			oid  string
			rb   []byte
			oids []string
		)
		for it.Scan(&oid, &rb) {
			if _, err := store.DecodeRouteAlias(rb, &route); err == nil && route.UpdatedAt < cut {
				oids = append(oids, oid)
			}
		}
		if err := it.Close(); err != nil {
			return n, fmt.Errorf("cannot list inactive installations of app %s: %w", appID, err)
		}
		for _, oid := range oids {
			if n >= limit {
				break
			}
			st, err := s.readInst(ctx, appID, oid)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return n, fmt.Errorf("cannot read installation %s of app %s: %w", oid, appID, err)
			}
			if st.inst.UpdatedAt >= cut {
				continue
			}
			if err := s.deleteStored(ctx, appID, &st); err != nil {
				return n, fmt.Errorf("cannot delete inactive installation %s of app %s: %w", oid, appID, err)
			}
			n++
		}
	}
	return n, nil
}
