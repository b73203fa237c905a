package fanout

import (
	"context"
	"errors"
	"flag"
	"time"
)

// PlannerConfig tunes how jobs are split into tasks.
type PlannerConfig struct {
	// BucketsPerTask is how many buckets one task scans. Smaller tasks spread a push over
	// more workers and lose less on a crash; larger ones cost fewer record updates.
	BucketsPerTask int
	// IDsPerTask is how many point ids (listed devices, objectId/deviceToken hints) one
	// task looks up.
	IDsPerTask int
	// MinTaskRows is the fewest installations a task of a query push should scan, where the
	// store can count them (SourceCounter; Pebble can, Cassandra does not): a push is cut into
	// as many tasks as its source holds MinTaskRows rows, one at least, at most one per
	// BucketsPerTask buckets. Each task costs a log message, progress and record writes
	// whatever it finds, so 32 tasks for a few hundred rows cost far more than the rows. 0
	// always cuts one task per BucketsPerTask buckets.
	MinTaskRows int
	// InlineSingle runs a job planned as one task in the planner itself (Planner.SetRunner),
	// instead of appending it to push.tasks for a worker: a push to a small source then costs
	// no task message, no task read and no consumer commit. A task paced by flow_control is
	// always appended: it may take long, and the planner's partition would wait for it.
	InlineSingle bool
}

// DefaultPlannerConfig: 256 buckets / 8 = 32 tasks per push, enough to keep every partition
// of a 2–8 node cluster busy while each task stays a few seconds of work.
func DefaultPlannerConfig() PlannerConfig {
	return PlannerConfig{BucketsPerTask: 8, IDsPerTask: 1000, MinTaskRows: 2000, InlineSingle: true}
}

// Validate checks the values.
func (c PlannerConfig) Validate() error {
	if c.BucketsPerTask < 1 {
		return errors.New("fanout planner: buckets per task must be at least 1")
	}
	if c.IDsPerTask < 1 {
		return errors.New("fanout planner: ids per task must be at least 1")
	}
	if c.MinTaskRows < 0 {
		return errors.New("fanout planner: min task rows must not be negative")
	}
	return nil
}

// RegisterFlags registers the fields under prefix (e.g. "fanout.").
func (c *PlannerConfig) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.IntVar(&c.BucketsPerTask, prefix+"buckets-per-task", c.BucketsPerTask, "buckets scanned by one fan-out task")
	fs.IntVar(&c.IDsPerTask, prefix+"ids-per-task", c.IDsPerTask, "point ids looked up by one fan-out task")
	fs.BoolVar(&c.InlineSingle, prefix+"inline-single-task", c.InlineSingle, "run a push planned as one task (a small source, a short device list) in the planner instead of handing the task to a worker through push.tasks; a task paced by flow_control is always handed over")
	fs.IntVar(&c.MinTaskRows, prefix+"min-task-rows", c.MinTaskRows, "fewest installations a fan-out task of a query push scans: a push is cut into as many tasks as its source holds this many (0: one task per buckets-per-task buckets)")
}

// WorkerConfig tunes task execution.
type WorkerConfig struct {
	// BatchSize is how many deliveries go to the sender in one call. With a checkpoint after
	// every batch it is also what a crash may send twice per task in flight: 100 keeps a kill
	// -9 of a worker running 4 tasks within 400 duplicates (0.4% of a 100,000-device push),
	// and amortises the batch's checkpoint over 100 deliveries (its fsync: SyncEvery).
	BatchSize int
	// CheckpointEvery bounds the deliveries a task makes between two checkpoints: the
	// duplicates a crash can cause per task in flight. 0 (the default) checkpoints after every
	// batch, so a crash repeats at most the batch being sent; otherwise at least BatchSize.
	CheckpointEvery int
	// SyncEvery bounds the deliveries a task makes between two fsyncs of its per-batch writes
	// (the daily-volume reservation before a batch, the checkpoint after it) on a store that
	// can write them without one of their own (ProgressNoSync, VolumeNoSync: Pebble). The
	// writes between are durable with the next synced write of the store, and its log hands
	// them to the OS within milliseconds (longer while it is in an fsync). So a process crash
	// usually repeats what CheckpointEvery says, and at most, as a machine crash, SyncEvery
	// deliveries per task, plus the batches in flight; those it repeats it also
	// reserves again, as the reservations lost were theirs. A sync costs CPU beyond its I/O
	// (the fdatasync, the Go runtime's handoff of the blocked thread's processor). A
	// checkpoint is synced when the next batch could take the deliveries since the last
	// synced one past this bound, so a bound at or below CheckpointEvery syncs each
	// checkpoint; 0 syncs every write, the reservations too.
	SyncEvery int
	// QueueBatches is how many batches the scan may run ahead of the send (back-pressure).
	QueueBatches int
	// SendAhead is the most batches a task keeps at the sender at once: a scanned batch goes
	// to the sender without waiting for the answers to those before it while fewer are in
	// flight (a gateway's latency: at 20 ms per answer, one batch of 100 at a time caps a task
	// near 5,000 deliveries/s). A crash repeats what is unrecorded: the batches in flight (at
	// most SendAhead × BatchSize per task), and up to CheckpointEvery deliveries before them.
	SendAhead int
	// Concurrency is how many tasks a worker runs at once, whatever partitions it owns.
	Concurrency int
	// BusyTasks is how many of fan-out's goroutines (planners, tasks, scans) may work at once
	// while the node's API has requests in hand (Worker.SetIntake, gate.go; 0: no limit). The
	// others wait; one waiting on the sender holds no token.
	BusyTasks int
	// RecordCheck is how long a worker trusts its last read of a push record before it reads
	// it again to notice a cancel (the spec's "stops within a second").
	RecordCheck time.Duration
	// MaxErrors bounds the distinct failure reasons kept on a record.
	MaxErrors int

	clock Clock // test hook: nil ⇒ wall clock
	// abrupt (test hook): a task interrupted by the end of ctx returns without its final
	// checkpoint, as if the process had died.
	abrupt bool
}

// DefaultWorkerConfig returns the defaults.
func DefaultWorkerConfig() WorkerConfig {
	return WorkerConfig{
		BatchSize:       100,
		CheckpointEvery: 0,
		// Four batches: a 100,000-device push syncs 250 times instead of 2,000.
		SyncEvery:    400,
		QueueBatches: 4,
		SendAhead:    8,
		Concurrency:  4,
		BusyTasks:    1,
		RecordCheck:  time.Second,
		MaxErrors:    20,
	}
}

// Validate checks the values.
func (c WorkerConfig) Validate() error {
	switch {
	case c.BatchSize < 1:
		return errors.New("fanout worker: batch size must be at least 1")
	case c.CheckpointEvery != 0 && c.CheckpointEvery < c.BatchSize:
		return errors.New("fanout worker: checkpoint interval must be 0 (every batch) or at least the batch size")
	case c.SyncEvery < 0:
		return errors.New("fanout worker: sync interval must not be negative")
	case c.QueueBatches < 1:
		return errors.New("fanout worker: queue batches must be at least 1")
	case c.SendAhead < 1:
		return errors.New("fanout worker: send ahead must be at least 1")
	case c.Concurrency < 1:
		return errors.New("fanout worker: concurrency must be at least 1")
	case c.BusyTasks < 0:
		return errors.New("fanout worker: busy tasks must be 0 (no limit) or more")
	case c.RecordCheck <= 0 || c.RecordCheck > time.Second:
		return errors.New("fanout worker: record check must be in (0, 1s]")
	case c.MaxErrors < 1:
		return errors.New("fanout worker: max errors must be at least 1")
	}
	return nil
}

// RegisterFlags registers the fields under prefix (e.g. "fanout.").
func (c *WorkerConfig) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.IntVar(&c.BatchSize, prefix+"batch-size", c.BatchSize, "deliveries handed to the sender per call")
	fs.IntVar(&c.CheckpointEvery, prefix+"checkpoint-every", c.CheckpointEvery, "deliveries between task checkpoints, the duplicates a crash may cause per task in flight (0: after every batch)")
	fs.IntVar(&c.SyncEvery, prefix+"sync-every", c.SyncEvery, "deliveries between fsyncs of a task's per-batch writes (daily-volume reservation, checkpoint) on the embedded store: the duplicates a machine crash may cause per task in flight (0: every write synced; at or below --fanout-checkpoint-every: every checkpoint synced)")
	fs.IntVar(&c.QueueBatches, prefix+"queue-batches", c.QueueBatches, "batches the scan may run ahead of sending")
	fs.IntVar(&c.SendAhead, prefix+"send-ahead", c.SendAhead, "most batches a task keeps at the sender at once (gateway latency); a crash may repeat that many batches per task in flight")
	fs.IntVar(&c.Concurrency, prefix+"concurrency", c.Concurrency, "tasks a worker runs at once")
	fs.IntVar(&c.BusyTasks, prefix+"busy-tasks", c.BusyTasks, "how many of fan-out's planners, tasks and scans may work at once while this node's API has requests in hand, so that intake keeps a core (0: no limit); one waiting on a gateway counts for none")
	fs.DurationVar(&c.RecordCheck, prefix+"record-check", c.RecordCheck, "how often a task re-reads its push record to notice a cancel")
	fs.IntVar(&c.MaxErrors, prefix+"max-errors", c.MaxErrors, "distinct failure reasons kept on a push record")
}

// Clock is time as fan-out sees it: flow control and record caching run on it, so tests
// inject one that advances without sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
