package pebble

import (
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/store"
)

// deadApps is the set of apps that may hold dead-token marks (tDead rows). A write that gives
// an installation a device id clears the id's mark (putInstBatch, the import), a deletion that
// is one more row in the memtable for every new device id, the seventh row of a new
// installation; an app with no mark at all (an app that has not pushed yet, an app being
// imported) needs none. The set is complete: it is read from the store at Open and an app
// joins it before its first mark is written (MarkDeadToken), so a writer that finds its app
// outside it knows no mark of the app was written before it looked. A mark written while an
// installation is being written (the gateway calling the token dead while the app registers it
// again) may be kept or cleared, as either order of the two writes would.
type deadApps struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// loadDeadApps reads the apps holding marks in db: one seek per such app.
func loadDeadApps(db *pebble.DB) (*deadApps, error) {
	d := &deadApps{m: map[string]struct{}{}}
	lower := []byte{tDead}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		app, _, err := store.DecodeKeyString(it.Key()[1:])
		if err != nil {
			return nil, fmt.Errorf("cannot read the app of dead-token mark %q: %w", it.Key(), err)
		}
		d.m[app] = struct{}{}
		ok = it.SeekGE(prefixEnd(appendStr([]byte{tDead}, app)))
	}
	return d, it.Error()
}

// add counts app among those with marks; call it before writing the app's first mark.
func (d *deadApps) add(app string) {
	d.mu.Lock()
	d.m[app] = struct{}{}
	d.mu.Unlock()
}

// has says whether app may hold marks.
func (d *deadApps) has(app string) bool {
	d.mu.Lock()
	_, ok := d.m[app]
	d.mu.Unlock()
	return ok
}
