// Package fanout owns turning accepted push jobs into deliveries: the Planner (job → tasks,
// one per bucket range, on push.tasks), the Worker (task → deliveries: scan the store's index
// rows, apply the full where as a residual filter, pace, hand batches to the sender), task
// checkpoints, per-push flow control, daily volume, cancellation, and the completion of push
// records with exact counts.
//
// Delivery semantics: at least once per target. A task checkpoints its cursor and counts as
// soon as its next batch could take the unrecorded deliveries past CheckpointEvery (by default
// after every batch), so a crash re-delivers at most CheckpointEvery targets (by default the
// batch being sent) per task in flight. On a store that can write them without an fsync of
// their own (Pebble), a task's checkpoints and daily-volume reservations are synced only every
// SyncEvery deliveries, so a machine crash re-delivers up to that many. A task's
// queue offset is committed only after its final progress and its share of the record's counts
// are written; see complete.go for how the counts are added exactly once.
//
// Concurrency: Planner and Worker are services (Run(ctx) error) safe to run in several
// processes against one store and log; a Worker runs at most Config.Concurrency tasks at once,
// each with one scan goroutine and one send goroutine joined by a bounded queue of batches.
package fanout
