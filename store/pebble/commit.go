package pebble

import (
	"github.com/cockroachdb/pebble/v2"
)

// commitUnlockSync applies b without waiting for the WAL, calls unlock (the caller's
// stripes), then waits until b is durable. It returns nil only once b survives a crash, as
// b.Commit(pebble.Sync) would, but the stripes are not held across the fsync, so writers of
// the same stripes queue behind the memtable insert only, not behind a disk sync. unlock is
// called exactly once, whatever happens.
//
// Durability comes from one synced WAL record written after b (an empty LogData record, which
// touches no key). That this sync covers b rests on Pebble's write path (read in
// cockroachdb/pebble/v2 v2.1.7; re-check on upgrade):
//
//   - commitPipeline.prepare (commit.go) writes every batch's WAL record under
//     commitPipeline.mu, in sequence-number order, before Commit returns: a record written by
//     a later Commit call follows b in the WAL.
//   - record.LogWriter.SyncRecordGeneralized (record/log_writer.go), which the standalone WAL
//     writer calls for every record: when a sync is requested, "any record written to the
//     LogWriter to this point will be flushed to the OS and synced to disk"; flushLoop takes
//     the pending syncs before it takes the written bytes, so the fsync it signals covers
//     everything written before the request.
//   - DB.rotateWAL (db.go), called under commitPipeline.mu when the memtable rotates, closes
//     the previous WAL (writing its EOF trailer and syncing it) before any record goes to the
//     new one: a synced record in a later WAL implies every earlier WAL is synced.
//   - The store never sets Options.DisableWAL or WAL failover.
//
// Concurrent callers' LogData records join the same group commit as synced batches, so the
// extra record costs no extra fsync under load. Between the apply and the sync, b is visible
// to readers but not yet durable; Pebble already publishes a synced batch before its fsync
// (see DB.ApplyNoSyncWait), so readers gain no new anomaly, and a later writer that read b
// returns only after its own sync, which covers b.
func (s *Store) commitUnlockSync(b *pebble.Batch, unlock func()) error {
	err := b.Commit(pebble.NoSync)
	unlock()
	if err != nil {
		return err
	}
	return s.syncWAL()
}

// syncWAL returns once every batch committed before the call is durable (see
// commitUnlockSync for why an empty synced record is enough).
func (s *Store) syncWAL() error {
	return s.db.LogData(nil, pebble.Sync)
}
