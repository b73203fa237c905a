package main

import (
	"os"
	"runtime"

	"go.uber.org/zap"

	"github.com/pushd/pushd/store/pebble"
)

// spareProc runs the process with the Ps the embedded store asks for (pebble.Procs) unless
// GOMAXPROCS is set in the environment. It starts from the runtime's default (the CPUs the
// process may use, cgroup limits included), so calling it again changes nothing.
func spareProc(log *zap.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.SetDefaultGOMAXPROCS()
	cpus := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(pebble.Procs(cpus))
	log.Info("GOMAXPROCS set for the embedded store's synced commits and background work (GOMAXPROCS in the environment overrides)",
		zap.Int("cpus", cpus), zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)))
}
