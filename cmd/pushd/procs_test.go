package main

import (
	"runtime"
	"testing"

	"go.uber.org/zap"
)

func TestServeSpareProcOnceAndOverridable(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)

	t.Setenv("GOMAXPROCS", "")
	spareProc(zap.NewNop())
	spareProc(zap.NewNop())
	if got := runtime.GOMAXPROCS(0); got != def+2 {
		t.Fatalf("GOMAXPROCS after two calls = %d, want the default %d plus two", got, def)
	}

	runtime.GOMAXPROCS(def)
	t.Setenv("GOMAXPROCS", "1")
	spareProc(zap.NewNop())
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("GOMAXPROCS with the variable set = %d, want it left at %d", got, def)
	}
}
