package pebble

// Procs is the GOMAXPROCS for a process whose requests commit to this store synced, given
// the CPUs it may use: one more. A synced commit parks the WAL writer's thread in
// fdatasync, and that thread keeps its P until the runtime's monitor hands the P off, so with
// GOMAXPROCS equal to the CPUs a core idles during every sync while requests wait to run.
// Measured on 2 cores (go test -bench PushAccept -cpu 2,3 ./api/pushapi): accepted pushes
// 8–10k/s at 2 Ps, 13–14k/s at 3, with CPU use 129% → 160%.
func Procs(cpus int) int { return cpus + 1 }
