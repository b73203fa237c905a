package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// InstallationStore is what the installation handlers need of the store.
type InstallationStore interface {
	GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error)
	LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (objectID string, err error)
	PutInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error
	DeleteInstallation(ctx context.Context, appID string, buckets int, objectID string) error
	Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) error
}

// NewInstallationPutter is an optional InstallationStore capability: PutNewInstallation is
// PutInstallation for an objectId just generated (newObjectID: 96 random bits, so no stored
// version exists), which spares the store the read of one.
type NewInstallationPutter interface {
	PutNewInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error
}

const maxObjectIDLen = 64 // our ids are 24; longer ones cannot exist

// Installation route names (metric labels).
const (
	routeInstCreate = "installations_create"
	routeInstList   = "installations_list"
	routeInstGet    = "installation_get"
	routeInstPut    = "installation_update"
	routeInstDelete = "installation_delete"
)

func (s *Server) registerInstallations() {
	s.Register(Route{Method: "POST", Path: "/1.1/installations", Name: routeInstCreate, Auth: AuthApp, JSONBody: true, MaxBody: InstallationBodyLimit}, s.createInstallation)
	s.Register(Route{Method: "GET", Path: "/1.1/installations", Name: routeInstList, Auth: AuthMaster}, s.listInstallations)
	s.Register(Route{Method: "GET", Path: "/1.1/installations/:id", Name: routeInstGet, Auth: AuthApp}, s.getInstallation)
	s.Register(Route{Method: "PUT", Path: "/1.1/installations/:id", Name: routeInstPut, Auth: AuthApp, JSONBody: true, MaxBody: InstallationBodyLimit}, s.updateInstallation)
	s.Register(Route{Method: "DELETE", Path: "/1.1/installations/:id", Name: routeInstDelete, Auth: AuthMaster}, s.deleteInstallation)
	// The original's generic object paths for the same class, which its JavaScript SDK
	// (AV.Installation is AV.Object "_Installation") and every SDK's AV.Query use.
	s.Register(Route{Method: "POST", Path: "/1.1/classes/_Installation", Name: routeInstCreate, Auth: AuthApp, JSONBody: true, MaxBody: InstallationBodyLimit}, s.createInstallation)
	s.Register(Route{Method: "GET", Path: "/1.1/classes/_Installation", Name: routeInstList, Auth: AuthMaster}, s.listInstallations)
	s.Register(Route{Method: "GET", Path: "/1.1/classes/_Installation/:id", Name: routeInstGet, Auth: AuthApp}, s.getInstallation)
	s.Register(Route{Method: "PUT", Path: "/1.1/classes/_Installation/:id", Name: routeInstPut, Auth: AuthApp, JSONBody: true, MaxBody: InstallationBodyLimit}, s.updateInstallation)
	s.Register(Route{Method: "DELETE", Path: "/1.1/classes/_Installation/:id", Name: routeInstDelete, Auth: AuthMaster}, s.deleteInstallation)
}

// isObjectIDShape says whether s looks like an objectId of ours or the original's: 24
// lowercase hex digits.
func isObjectIDShape(s string) bool {
	if len(s) != 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// wantsSavedDoc says whether a save asks for the stored document in its answer: the
// original's fetchWhenSave=true (Java SDK, every installation save) or new=true (JavaScript
// SDK's fetchWhenSave option).
func wantsSavedDoc(ctx *fasthttp.RequestCtx) bool {
	args := ctx.QueryArgs()
	return string(args.Peek("fetchWhenSave")) == "true" || string(args.Peek("new")) == "true"
}

// writeSaved answers a save: the short form (timestamp and objectId), or the stored
// document when the request asked for it (wantsSavedDoc).
func writeSaved(ctx *fasthttp.RequestCtx, status int, field string, now time.Time, inst *push.Installation) {
	if wantsSavedDoc(ctx) {
		WriteJSON(ctx, status, inst.Doc)
		return
	}
	WriteJSON(ctx, status, appendTimeID(make([]byte, 0, 80), field, now, inst.ObjectID))
}

func errNoInstallation(id string) *push.Error {
	return push.Errorf(push.CodeObjectNotFound, "installation %q not found", clipID(id))
}

func clipID(id string) string {
	if len(id) > maxObjectIDLen {
		return id[:maxObjectIDLen] + "..."
	}
	return id
}

// lookupAll resolves device ids to objectIds, in ids order, without duplicates.
func (s *Server) lookupAll(ctx context.Context, appID string, ids []push.DeviceRef) ([]string, error) {
	var out []string
	for _, id := range ids {
		oid, err := s.deps.Installations.LookupDevice(ctx, appID, id.Kind, id.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot look up a %s of app %s: %w", id.Kind, appID, err)
		}
		dup := false
		for _, o := range out {
			dup = dup || o == oid
		}
		if !dup {
			out = append(out, oid)
		}
	}
	return out, nil
}

// subsetOf says whether every element of a is in b.
func subsetOf(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// createInstallation is POST /1.1/installations: a create (201) or, when one of the body's
// device ids already belongs to an installation of the app, an update of that one (200).
// Device ids are matched in the order installationId, deviceToken, registrationId; the first
// match is updated unless it carries another installationId (an earlier install on the same
// device). Every other installation holding one of the ids is a stale registration of the
// device and is deleted, as Parse does.
func (s *Server) createInstallation(ctx *fasthttp.RequestCtx, c *Call) error {
	body, perr := decodeObject(ctx.PostBody())
	if perr != nil {
		return perr
	}
	// The original's Objective-C SDK sends every save of a known installation as a create
	// carrying its objectId (LCInstallation.m, postProcessBatchRequests); the device ids
	// decide which record it updates, so an objectId of the objectId shape is accepted and
	// not used (the record it names may have been swept meanwhile). Anything else in that
	// field is still 117.
	if oid, ok := body[fObjectID].(string); ok && isObjectIDShape(oid) {
		delete(body, fObjectID)
	}
	if perr := checkBodyFields(body); perr != nil {
		return perr
	}
	probe := make(map[string]any, len(body)+3)
	if perr := applyBody(probe, body); perr != nil {
		return perr
	}
	if perr := validateDoc(probe); perr != nil {
		return perr
	}
	r := routeOf("", probe, c.Now)
	// A write the store refuses because a device id the stored record carries was taken
	// meanwhile (the record was swept between our read and our write, and another device took
	// its registrationId) is a race lost, not a client error: start over.
	for attempt := 1; ; attempt++ {
		err := s.upsertInstallation(ctx, c, body, probe, &r)
		if !errors.Is(err, store.ErrDuplicate) {
			return err
		}
		if attempt == 3 {
			return push.Errorf(push.CodeDuplicateValue, "a device id of this installation belongs to another installation")
		}
	}
}

// lockMatches locks the device ids of ids, looks them up, and locks the installations they
// point at; it returns what it holds and those installations. While these are held no writer
// can move one of the ids: taking an id needs its device lock, giving one up needs its
// installation's.
func (s *Server) lockMatches(ctx context.Context, appID string, ids []push.DeviceRef) (held, []string, error) {
	devKeys := make([]string, 0, len(ids))
	for _, id := range ids {
		devKeys = append(devKeys, deviceKey(appID, string(id.Kind), id.ID))
	}
	objKeys := func(oids []string) []string {
		out := make([]string, 0, len(oids))
		for _, oid := range oids {
			out = append(out, objectKey(appID, oid))
		}
		return out
	}
	h := s.locks.lock(devKeys...)
	matches, err := s.lookupAll(ctx, appID, ids)
	if err != nil {
		s.locks.unlock(h)
		return nil, nil, err
	}
	if len(matches) == 0 {
		return h, nil, nil // an id nobody holds can only be taken under its device lock: ours
	}
	// recheck looks the ids up again while h is held: done when they point only at
	// installations among matches (held); else h is released.
	recheck := func(h held, matches []string) (after []string, done bool, err error) {
		after, err = s.lookupAll(ctx, appID, ids)
		if err == nil && subsetOf(after, matches) {
			return after, true, nil
		}
		s.locks.unlock(h)
		return after, false, err
	}
	if h2, ok := s.locks.extend(h, objKeys(matches)...); !ok {
		s.locks.unlock(h)
	} else {
		// extend may have waited for an installation's lock while its holder moved an id
		// away (a PUT changing registrationId), so look again.
		after, done, err := recheck(h2, matches)
		switch {
		case err != nil:
			return nil, nil, err
		case done:
			return h2, after, nil
		}
		matches = after
	}
	// Lock everything at once, in order, until the ids point only at installations held.
	for attempt := 0; ; attempt++ {
		h = s.locks.lock(append(devKeys, objKeys(matches)...)...)
		after, done, err := recheck(h, matches)
		switch {
		case err != nil:
			return nil, nil, err
		case done:
			return h, after, nil
		case attempt == 8:
			return nil, nil, push.Errorf(push.CodeUnavailable, "installation is being changed concurrently, retry")
		}
		matches = after
	}
}

// upsertInstallation is one attempt of createInstallation once the body is validated: probe
// is the body as a new document, r its route. An error wrapping store.ErrDuplicate means the
// store refused the write for a device id another installation holds, which under the locks
// taken here only a race with the sweep can cause (createInstallation starts over).
func (s *Server) upsertInstallation(ctx *fasthttp.RequestCtx, c *Call, body, probe map[string]any, r *push.Route) error {
	ids := r.DeviceIDs()
	app := c.App
	bg := context.Background()
	h, matches, err := s.lockMatches(bg, app.ID, ids)
	if err != nil {
		return err
	}
	defer s.locks.unlock(h)

	var (
		target   string
		existing push.Installation
		stale    []string
	)
	for _, oid := range matches {
		inst, err := s.deps.Installations.GetInstallation(bg, app.ID, oid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot read installation %s of app %s: %w", oid, app.ID, err)
		}
		// A record with another installationId is an earlier install on this device.
		otherInstall := r.InstallationID != "" && inst.InstallationID != "" && inst.InstallationID != r.InstallationID
		if target == "" && !otherInstall {
			target, existing = oid, inst
			continue
		}
		stale = append(stale, oid)
	}

	if target == "" {
		if perr := checkVendor(probe, app.Settings.Edition, ""); perr != nil {
			return perr
		}
		for _, st := range stale {
			err := s.deps.Installations.DeleteInstallation(bg, app.ID, app.Settings.Buckets, st)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("cannot delete stale installation %s of app %s: %w", st, app.ID, err)
			}
		}
		oid := newObjectID()
		inst, err := buildInstallation(oid, probe, c.Now, c.Now)
		if err != nil {
			return err
		}
		put := s.deps.Installations.PutInstallation
		if np, ok := s.deps.Installations.(NewInstallationPutter); ok {
			put = np.PutNewInstallation
		}
		if err := put(bg, app.ID, app.Settings.Buckets, inst); err != nil {
			return wrapPutError(err, oid, app.ID)
		}
		ctx.Response.Header.Set("Location", s.baseURL(ctx)+"/1.1/installations/"+oid)
		writeSaved(ctx, fasthttp.StatusCreated, fCreatedAt, c.Now, &inst)
		return nil
	}

	doc, err := decodeStored(existing.Doc)
	if err != nil {
		return fmt.Errorf("cannot decode installation %s of app %s: %w", target, app.ID, err)
	}
	if existing.DeviceType != r.DeviceType {
		return push.Errorf(push.CodeReadOnlyKey, "deviceType of installation %s is %s and may not be changed", target, existing.DeviceType)
	}
	if perr := applyBody(doc, body); perr != nil {
		return perr
	}
	if perr := validateDoc(doc); perr != nil {
		return perr
	}
	if perr := checkVendor(doc, app.Settings.Edition, existing.Vendor); perr != nil {
		return perr
	}
	// Removing an installationId or deviceToken the record has (a null, or a Delete) is a
	// change, refused as on PUT; a new token for the same installation is not (it rotates).
	for _, f := range [...]struct{ field, had string }{{fInstallationID, existing.InstallationID}, {fDeviceToken, existing.DeviceToken}} {
		if _, kept := doc[f.field]; f.had != "" && !kept {
			return push.Errorf(push.CodeReadOnlyKey, "%s of installation %s may not be removed", f.field, target)
		}
	}
	for _, stale := range stale {
		err := s.deps.Installations.DeleteInstallation(bg, app.ID, app.Settings.Buckets, stale)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("cannot delete stale installation %s of app %s: %w", stale, app.ID, err)
		}
	}
	inst, err := buildInstallation(target, doc, timeFromMillis(existing.CreatedAt), c.Now)
	if err != nil {
		return err
	}
	if err := s.deps.Installations.PutInstallation(bg, app.ID, app.Settings.Buckets, inst); err != nil {
		return wrapPutError(err, target, app.ID)
	}
	writeSaved(ctx, fasthttp.StatusOK, fUpdatedAt, c.Now, &inst)
	return nil
}

func (s *Server) putInstallation(ctx context.Context, app *push.App, inst push.Installation) error {
	err := s.deps.Installations.PutInstallation(ctx, app.ID, app.Settings.Buckets, inst)
	if errors.Is(err, store.ErrDuplicate) {
		return push.Errorf(push.CodeDuplicateValue, "a device id of this installation belongs to another installation")
	}
	return wrapPutError(err, inst.ObjectID, app.ID)
}

// wrapPutError names the installation in a store error from PutInstallation, keeping
// store.ErrDuplicate recognisable.
func wrapPutError(err error, oid, appID string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cannot write installation %s of app %s: %w", oid, appID, err)
}

// updateInstallation is PUT /1.1/installations/<objectId>: a partial update with array and
// number operations. deviceType, and installationId and deviceToken once set, may not change
// (117); a new device id that belongs to another installation is refused (137).
func (s *Server) updateInstallation(ctx *fasthttp.RequestCtx, c *Call) error {
	oid := c.Params[0]
	if len(oid) > maxObjectIDLen {
		return errNoInstallation(oid)
	}
	body, perr := decodeObject(ctx.PostBody())
	if perr != nil {
		return perr
	}
	// The original's Objective-C SDK sends a known installation's save as a PUT whose body
	// repeats its objectId (LCInstallation.m postProcessBatchRequests, then LCObject.m
	// sendBatchRequest); the same id is no change. Another one is still 117.
	if v, ok := body[fObjectID].(string); ok && v == oid {
		delete(body, fObjectID)
	}
	if perr := checkBodyFields(body); perr != nil {
		return perr
	}
	app := c.App
	bg := context.Background()
	keys := []string{objectKey(app.ID, oid)}
	for _, f := range [...]struct {
		field string
		kind  push.IDKind
		lower bool
	}{{fDeviceToken, push.KindToken, true}, {fInstallationID, push.KindIID, true}, {fRegistrationID, push.KindRegID, false}} {
		if v, ok := body[f.field].(string); ok && v != "" {
			if f.lower {
				v = lowerASCII(v)
			}
			keys = append(keys, deviceKey(app.ID, string(f.kind), v))
		}
	}
	h := s.locks.lock(keys...)
	defer s.locks.unlock(h)

	existing, err := s.deps.Installations.GetInstallation(bg, app.ID, oid)
	if errors.Is(err, store.ErrNotFound) {
		return errNoInstallation(oid)
	}
	if err != nil {
		return fmt.Errorf("cannot read installation %s of app %s: %w", oid, app.ID, err)
	}
	if v, ok := body[fDeviceType]; ok && v != existing.DeviceType {
		return push.Errorf(push.CodeReadOnlyKey, "deviceType may not be changed")
	}
	doc, err := decodeStored(existing.Doc)
	if err != nil {
		return fmt.Errorf("cannot decode installation %s of app %s: %w", oid, app.ID, err)
	}
	if perr := applyBody(doc, body); perr != nil {
		return perr
	}
	if perr := validateDoc(doc); perr != nil {
		return perr
	}
	if perr := checkVendor(doc, app.Settings.Edition, existing.Vendor); perr != nil {
		return perr
	}
	r := routeOf(oid, doc, c.Now)
	switch {
	case r.DeviceType != existing.DeviceType:
		return push.Errorf(push.CodeReadOnlyKey, "deviceType may not be changed")
	case existing.InstallationID != "" && r.InstallationID != existing.InstallationID:
		return push.Errorf(push.CodeReadOnlyKey, "installationId may not be changed")
	case existing.DeviceToken != "" && r.DeviceToken != existing.DeviceToken:
		return push.Errorf(push.CodeReadOnlyKey, "deviceToken may not be changed; create a new installation for a new token")
	}
	old := map[push.DeviceRef]bool{}
	for _, id := range existing.Route.DeviceIDs() {
		old[id] = true
	}
	for _, id := range r.DeviceIDs() {
		if old[id] {
			continue
		}
		other, err := s.deps.Installations.LookupDevice(bg, app.ID, id.Kind, id.ID)
		if err == nil && other != oid {
			return push.Errorf(push.CodeDuplicateValue, "this %s belongs to another installation", idFieldName(string(id.Kind)))
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("cannot look up a %s of app %s: %w", id.Kind, app.ID, err)
		}
	}
	inst, err := buildInstallation(oid, doc, timeFromMillis(existing.CreatedAt), c.Now)
	if err != nil {
		return err
	}
	if err := s.putInstallation(bg, app, inst); err != nil {
		return err
	}
	writeSaved(ctx, fasthttp.StatusOK, fUpdatedAt, c.Now, &inst)
	return nil
}

func idFieldName(kind string) string {
	switch push.IDKind(kind) {
	case push.KindToken:
		return fDeviceToken
	case push.KindIID:
		return fInstallationID
	}
	return fRegistrationID
}

// getInstallation is GET /1.1/installations/<objectId>: the stored document as is.
func (s *Server) getInstallation(ctx *fasthttp.RequestCtx, c *Call) error {
	oid := c.Params[0]
	if len(oid) > maxObjectIDLen {
		return errNoInstallation(oid)
	}
	inst, err := s.deps.Installations.GetInstallation(context.Background(), c.App.ID, oid)
	if errors.Is(err, store.ErrNotFound) {
		return errNoInstallation(oid)
	}
	if err != nil {
		return fmt.Errorf("cannot read installation %s of app %s: %w", oid, c.App.ID, err)
	}
	WriteJSON(ctx, fasthttp.StatusOK, inst.Doc)
	return nil
}

// deleteInstallation is DELETE /1.1/installations/<objectId> (master key): {}.
func (s *Server) deleteInstallation(ctx *fasthttp.RequestCtx, c *Call) error {
	oid := c.Params[0]
	if len(oid) > maxObjectIDLen {
		return errNoInstallation(oid)
	}
	app := c.App
	h := s.locks.lock(objectKey(app.ID, oid))
	defer s.locks.unlock(h)
	err := s.deps.Installations.DeleteInstallation(context.Background(), app.ID, app.Settings.Buckets, oid)
	if errors.Is(err, store.ErrNotFound) {
		return errNoInstallation(oid)
	}
	if err != nil {
		return fmt.Errorf("cannot delete installation %s of app %s: %w", oid, app.ID, err)
	}
	WriteJSON(ctx, fasthttp.StatusOK, []byte("{}"))
	return nil
}

// baseURL is the {base_url} of Location headers.
func (s *Server) baseURL(ctx *fasthttp.RequestCtx) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if ctx.IsTLS() {
		scheme = "https"
	}
	return scheme + "://" + string(ctx.Host())
}

// appendTimeID appends {"<field>":"<time>","objectId":"<id>"}.
func appendTimeID(b []byte, field string, t time.Time, oid string) []byte {
	b = append(b, `{"`...)
	b = append(b, field...)
	b = append(b, `":"`...)
	b = push.AppendTime(b, t) // digits and -:.TZ only: nothing to escape
	b = append(b, `","objectId":`...)
	return append(jsondoc.AppendString(b, oid), '}')
}

func timeFromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func decodeStored(doc []byte) (map[string]any, error) {
	m, err := jsondoc.DecodeObject(doc)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
