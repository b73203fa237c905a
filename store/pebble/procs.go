package pebble

// Procs is the GOMAXPROCS for a process whose requests commit to this store synced, given
// the CPUs it may use: two more.
//
// One for the WAL writer: a synced commit parks its thread in fdatasync, and that thread keeps
// its P until the runtime's monitor hands the P off, so with GOMAXPROCS equal to the CPUs a
// core idles during every sync while requests wait to run. Measured on 2 cores (go test -bench
// PushAccept -cpu 2,3 ./api/pushapi): accepted pushes 8–10k/s at 2 Ps, 13–14k/s at 3, with
// CPU use 129% → 160%.
//
// One for the store's background work: a memtable flush or a compaction runs for hundreds of
// milliseconds on a P of its own, and with one spare P only it took half of what requests had
// left on 2 cores, so the requests due meanwhile queued: the intake's open loop at 5,000
// pushes/s saw its slow requests bunched in the 50-ms windows of each flush (docs/decisions.md,
// Store item 8). With a P more the kernel shares the cores among one more thread, and the
// flush gets less of them while requests wait.
func Procs(cpus int) int { return cpus + 2 }
