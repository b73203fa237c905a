package pebble

import "sync"

// absence remembers the narrowed scans (ScanBuckets with a device type) that found no row, so
// the same scan comes back empty at once until the app's index rows are written again.
//
// Why: a push whose where pins a device type the app has no installation of (an iOS push to an
// app with only Android installations) still walks every row of the app's buckets, stepping over
// the other device types. In the intake load test that walk was a quarter of fan-out's CPU per
// push (about 220 µs for each such push over 940 rows), for no target.
//
// Soundness: a scan reads one snapshot, and a write of index rows becomes visible at its
// commit, after its batch was built. So a scan may remember an absence only if no write of the
// app's index rows was between its batch and its commit at any time during the scan: writers
// of the app count themselves in (begin, before they build the batch) and out (end, after the
// commit, failed or not), each time bumping the app's generation; a scan remembers only when no
// writer was in at its start and the generation has not moved at its end. begin also forgets
// what the app's scans remembered. Every writer of by_bucket and by_channel rows goes through
// putInstRows, which refuses to run without the writer's rowsWrite.
type absence struct {
	mu   sync.Mutex
	apps map[string]*appAbsence
	hits uint64 // scans answered from memory, for tests
}

// appAbsence is one app's state. An entry is dropped (prune) only when no writer is in; a scan
// that started on a dropped entry remembers into it, where nobody looks.
type appAbsence struct {
	writing int
	gen     uint64
	empty   map[absenceKey]struct{}
}

// absenceKey is one narrowed scan: its source (channel, "" for by_bucket), device type and
// bucket range.
type absenceKey struct {
	channel, deviceType string
	lo, hi              int
}

const (
	// absenceAppsMax bounds the apps with an entry; past it, entries without a writer in are
	// dropped.
	absenceAppsMax = 4096
	// absenceScansMax bounds the scans remembered per app; past it, the app's are forgotten.
	absenceScansMax = 64
)

// rowsWrite is a writer of one app's index rows between begin and end.
type rowsWrite struct {
	a   *absence
	app string
	e   *appAbsence
}

// begin counts in a writer of app's index rows; call end after its batch is committed or
// dropped.
func (a *absence) begin(app string) *rowsWrite {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.entry(app)
	e.writing++
	e.gen++
	clear(e.empty)
	return &rowsWrite{a: a, app: app, e: e}
}

// end counts the writer out.
func (w *rowsWrite) end() {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	w.e.writing--
	w.e.gen++
}

// absentScan is what a scan needs to remember that it found no row over its whole range.
type absentScan struct {
	e   *appAbsence // nil: the scan may not remember
	gen uint64
}

// look starts a scan of app: it reports whether k is remembered empty, and what the scan needs
// to remember it.
func (a *absence) look(app string, k absenceKey) (known bool, s absentScan) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.entry(app)
	if _, ok := e.empty[k]; ok {
		a.hits++
		return true, absentScan{}
	}
	return false, absentScan{e: e, gen: e.gen}
}

// known says whether a scan of k is remembered to find no row, without making an entry.
func (a *absence) known(app string, k absenceKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.apps[app]
	if !ok {
		return false
	}
	_, ok = e.empty[k]
	return ok
}

// remember records that the scan of k, started with s, found no row.
func (a *absence) remember(k absenceKey, s absentScan) {
	if s.e == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.e.gen != s.gen || s.e.writing > 0 {
		return // a writer was in at some time during the scan
	}
	if s.e.empty == nil {
		s.e.empty = map[absenceKey]struct{}{}
	} else if len(s.e.empty) >= absenceScansMax {
		clear(s.e.empty)
	}
	s.e.empty[k] = struct{}{}
}

// entry is app's entry, made if missing. a.mu is held.
func (a *absence) entry(app string) *appAbsence {
	if e, ok := a.apps[app]; ok {
		return e
	}
	if a.apps == nil {
		a.apps = map[string]*appAbsence{}
	} else if len(a.apps) >= absenceAppsMax {
		a.prune()
	}
	e := &appAbsence{}
	a.apps[app] = e
	return e
}

// prune drops every entry without a writer in. a.mu is held.
func (a *absence) prune() {
	for app, e := range a.apps {
		if e.writing == 0 {
			delete(a.apps, app)
		}
	}
}
