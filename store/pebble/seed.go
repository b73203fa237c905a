package pebble

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
)

// seedChunk is how many installations one unsynced seed batch carries (a few MiB of rows).
const seedChunk = 4096

// SeedInstallations bulk-loads installations for benchmarks and tests: unsynced batches of
// seedChunk installations, then one WAL sync. It assumes the object ids and device ids are new:
// it neither checks uniqueness nor removes the index rows of an earlier version.
func (s *Store) SeedInstallations(appID string, buckets int, insts []push.Installation) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := checkBuckets(buckets); err != nil {
		return err
	}
	w := s.absence.begin(appID)
	defer w.end()
	for len(insts) > 0 {
		n := min(len(insts), seedChunk)
		b := s.db.NewBatch()
		for i := range insts[:n] {
			inst := &insts[i]
			if err := setInstRows(w, b, appID, push.Bucket(inst.ObjectID, buckets), inst); err != nil {
				_ = b.Close()
				return fmt.Errorf("cannot seed installations of app %s: %w", appID, err)
			}
		}
		err := b.Commit(pebble.NoSync)
		s.forgetRows(b)
		_ = b.Close()
		if err != nil {
			return fmt.Errorf("cannot seed installations of app %s: %w", appID, err)
		}
		insts = insts[n:]
	}
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("cannot sync seeded installations of app %s: %w", appID, err)
	}
	return nil
}
