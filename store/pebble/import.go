package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// importChunk is how many installations one import batch carries: a few MiB of rows.
const importChunk = 4096

// importBatchRetain is the most a reused import batch keeps between passes: a chunk's batch
// is about 10 MiB; below that Pebble would drop the buffer at each Reset, and every pass would
// grow a new one by doubling (allocating and copying about 2 bytes for each byte written).
const importBatchRetain = 64 << 20

// ImportInstallations writes installations in bulk (pushd import): batches of importChunk,
// each committed atomically, so a crash leaves whole chunks; one WAL sync at the end makes
// them all durable before it returns (see commitUnlockSync for why it covers every batch). out[i] gets the outcome
// of insts[i] (len(out) must be len(insts)); by[i] the objectId that won against a stale one.
//
// Decisions follow store.ImportOutcome: the newest version of an objectId and the newest
// holder of a device id win, whatever the order of insts and whatever the store held, so a
// rerun ends in the same state. It holds the stripes of each chunk's objects and device ids
// while it reads and commits, so it may run beside the API's writers.
func (s *Store) ImportInstallations(ctx context.Context, appID string, buckets int, insts []push.Installation, out []store.ImportOutcome, by []string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := checkBuckets(buckets); err != nil {
		return err
	}
	if len(out) != len(insts) || len(by) != len(insts) {
		panic("BUG: ImportInstallations needs out and by as long as insts")
	}
	b := s.db.NewBatch(pebble.WithMaxRetainedSizeBytes(importBatchRetain))
	defer b.Close()
	wrote := false
	for start := 0; start < len(insts); start += importChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+importChunk, len(insts))
		w, err := s.importChunk(b, appID, buckets, insts[start:end], out[start:end], by[start:end])
		wrote = wrote || w
		if err != nil {
			return fmt.Errorf("cannot import installations of app %s: %w", appID, err)
		}
	}
	if wrote {
		if err := s.syncWAL(); err != nil {
			return fmt.Errorf("cannot sync imported installations of app %s: %w", appID, err)
		}
	}
	return nil
}

// newer reports whether installation (at, aid) wins against (bt, bid).
func newer(at int64, aid string, bt int64, bid string) bool {
	return at > bt || at == bt && aid > bid
}

// importChunk decides and writes one chunk, using b (empty) for its batches; wrote says
// whether it committed any.
func (s *Store) importChunk(b *pebble.Batch, appID string, buckets int, insts []push.Installation, out []store.ImportOutcome, by []string) (wrote bool, err error) {
	// Within the chunk: one winner per objectId, then one per device id.
	win := make(map[string]int, len(insts))
	for i := range insts {
		out[i], by[i] = 0, ""
		oid := insts[i].ObjectID
		if j, ok := win[oid]; ok {
			if insts[i].UpdatedAt < insts[j].UpdatedAt {
				out[i], by[i] = store.ImportKeptNewer, oid
				continue
			}
			out[j], by[j] = store.ImportKeptNewer, oid
		}
		win[oid] = i
	}
	holder := make(map[push.DeviceRef]int, len(insts))
	for i := range insts {
		if out[i] != 0 {
			continue
		}
		for _, d := range insts[i].Route.DeviceIDs() {
			j, ok := holder[d]
			if !ok {
				holder[d] = i
				continue
			}
			a, b := &insts[i], &insts[j]
			if newer(a.UpdatedAt, a.ObjectID, b.UpdatedAt, b.ObjectID) {
				out[j], by[j] = store.ImportStale, a.ObjectID
				holder[d] = i
			} else {
				out[i], by[i] = store.ImportStale, b.ObjectID
			}
		}
	}
	// A loser may have taken a device id from a winner above before losing another; give
	// every id back to the winners that hold it.
	for d, i := range holder {
		if out[i] != 0 {
			delete(holder, d)
		}
	}
	pending := make([]int, 0, len(insts))
	writing := make(map[string]bool, len(insts)) // objectIds this chunk still has to write
	for i := range insts {
		if out[i] == 0 {
			pending = append(pending, i)
			writing[insts[i].ObjectID] = true
		}
	}
	for len(pending) > 0 {
		next, w, err := s.importPass(b, appID, buckets, insts, out, by, pending, writing)
		wrote = wrote || w
		if err != nil {
			return wrote, err
		}
		if len(next) == len(pending) {
			// Each waits for another to give up a device id: ids swapped between
			// installations of one chunk, in the store and in the import. Rare enough to refuse.
			for _, i := range next {
				out[i] = store.ImportConflict
			}
			break
		}
		pending = next
	}
	return wrote, nil
}

// importPass writes the installations insts[i] for i in idx in one batch under their stripes
// (b, empty, reset on return; committed without sync: ImportInstallations syncs once at its
// end), and returns those it must leave to another pass: the ones whose device id the store
// gives to another installation of this chunk that is written in this pass (its new version
// gives the id up; the batch cannot both remove and set that row safely). wrote says whether
// it committed.
func (s *Store) importPass(b *pebble.Batch, appID string, buckets int, insts []push.Installation, out []store.ImportOutcome, by []string, idx []int, writing map[string]bool) (later []int, wrote bool, err error) {
	stripeIdx := make([]int, 0, len(idx)*3)
	for _, i := range idx {
		stripeIdx = append(stripeIdx, stripeOf("i", appID, insts[i].ObjectID))
		for _, d := range insts[i].Route.DeviceIDs() {
			stripeIdx = append(stripeIdx, stripeOf("d", appID, string(d.Kind), d.ID))
		}
	}
	unlock := s.locks.lockAll(stripeIdx)
	w := s.absence.begin(appID)
	defer w.end()              // after the commit
	marks := s.dead.has(appID) // no mark to clear in an app outside deadApps
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	defer b.Reset()
	olds, holders, err := s.importReads(appID, insts, idx)
	if err != nil {
		return nil, false, err
	}
	var (
		key     []byte
		deleted = map[string]int64{} // stale installations deleted in this batch: their updatedAt
	)
	for p, i := range idx {
		inst := &insts[i]
		old, found := olds[p].st, olds[p].found
		if found && old.inst.UpdatedAt > inst.UpdatedAt {
			out[i], by[i] = store.ImportKeptNewer, inst.ObjectID
			continue
		}
		ids := inst.Route.DeviceIDs()
		var oldIDs []push.DeviceRef
		if found {
			oldIDs = old.inst.Route.DeviceIDs()
		}
		owned := make([]bool, len(ids))
		var stale []stored
		wait := false
		for k, d := range ids {
			if containsRef(oldIDs, d) {
				owned[k] = true
				continue
			}
			key = deviceKey(key[:0], appID, string(d.Kind), d.ID)
			other, ok := holders[string(key)]
			if !ok || other == inst.ObjectID {
				owned[k] = ok
				continue
			}
			if writing[other] {
				wait = true // written in this pass: look again once it is
				break
			}
			if at, ok := deleted[other]; ok {
				// Its rows go in this batch (ours are set after); it still decides as if
				// stored, so the outcome does not depend on which row met it first.
				if newer(at, other, inst.UpdatedAt, inst.ObjectID) {
					out[i], by[i] = store.ImportStale, other
					break
				}
				continue
			}
			st, err := s.readInstRoute(appID, other)
			if errors.Is(err, store.ErrNotFound) {
				continue // a device row left without its installation: overwrite it
			}
			if err != nil {
				return nil, false, fmt.Errorf("cannot read installation %s: %w", other, err)
			}
			if newer(st.inst.UpdatedAt, other, inst.UpdatedAt, inst.ObjectID) {
				out[i], by[i] = store.ImportStale, other
				break
			}
			st.inst.ObjectID = other
			stale = append(stale, st)
		}
		if wait {
			later = append(later, i)
			continue
		}
		if out[i] != 0 {
			continue
		}
		for k := range stale {
			if _, ok := deleted[stale[k].inst.ObjectID]; ok {
				continue
			}
			deleted[stale[k].inst.ObjectID] = stale[k].inst.UpdatedAt
			if err := deleteInstRows(b, appID, &stale[k]); err != nil {
				return nil, false, err
			}
		}
		if err := putInstRows(w, b, appID, push.Bucket(inst.ObjectID, buckets), inst, ids, owned, old, found); err != nil {
			return nil, false, err
		}
		for k, d := range ids {
			if owned[k] || !marks {
				continue
			}
			if err := b.Delete(deadKey(key[:0], appID, d.ID), nil); err != nil {
				return nil, false, err
			}
		}
		out[i] = store.ImportStored
	}
	// The installations decided in this pass leave writing, so a waiting one finds them in
	// the store next pass.
	for _, i := range idx {
		if out[i] != 0 {
			delete(writing, insts[i].ObjectID)
		}
	}
	if !b.Empty() {
		locked = false
		err := b.Commit(pebble.NoSync)
		s.forgetRows(b) // under the stripes: their next writer must not find what b replaced
		unlock()
		if err != nil {
			return nil, true, err
		}
		wrote = true
	}
	return later, wrote, nil
}

// oldRead is the stored version of one installation of a pass, as importReads found it.
type oldRead struct {
	st    stored // without its document
	found bool
}

// importReads reads what a pass decides on, before it writes: the stored route of each
// insts[i] (olds[p] for i = idx[p]) and the holder of each of their device ids (holders, by
// device key; absent when free). It seeks one iterator through the keys in order, which
// costs less than a Get each: the iterator's tables stay open and positioned. The caller
// holds the stripes of every key read, so these are the values Gets in the pass would see.
func (s *Store) importReads(appID string, insts []push.Installation, idx []int) (olds []oldRead, holders map[string]string, err error) {
	type lookup struct {
		key []byte
		p   int // olds[p] for a primary row, -1 for a device row
	}
	looks := make([]lookup, 0, len(idx)*3)
	arena := make([]byte, 0, len(idx)*256) // the keys, one allocation for most passes
	add := func(p int, key []byte) {
		looks = append(looks, lookup{key: key[:len(key):len(key)], p: p})
	}
	for p, i := range idx {
		n := len(arena)
		arena = instKey(arena, appID, insts[i].ObjectID)
		add(p, arena[n:])
		for _, d := range insts[i].Route.DeviceIDs() {
			n = len(arena)
			arena = deviceKey(arena, appID, string(d.Kind), d.ID)
			add(-1, arena[n:])
		}
	}
	slices.SortFunc(looks, func(a, b lookup) int { return bytes.Compare(a.key, b.key) })
	// Most lookups of an import miss; L6 filters let those skip the bottom level's blocks.
	it, err := s.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	olds = make([]oldRead, len(idx))
	holders = map[string]string{}
	for _, l := range looks {
		if !it.SeekPrefixGE(l.key) || !bytes.Equal(it.Key(), l.key) {
			if err := it.Error(); err != nil {
				return nil, nil, err
			}
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, err
		}
		if l.p < 0 {
			holders[string(l.key)] = string(v)
			continue
		}
		st, err := decodeInstHead(v)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read installation %s: %w", insts[idx[l.p]].ObjectID, err)
		}
		olds[l.p] = oldRead{st: st, found: true}
	}
	return olds, holders, nil
}

func containsRef(refs []push.DeviceRef, d push.DeviceRef) bool {
	for _, r := range refs {
		if r == d {
			return true
		}
	}
	return false
}
