package pebble

import (
	"context"
	"fmt"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// TestStoreImportDurableOnReturn cuts power (a file system that keeps only synced data) right
// after ImportInstallations returns: its batches are committed without their own fsync, so
// every installation of every chunk, and its device rows, must be there only because the call
// syncs the WAL before returning.
func TestStoreImportDurableOnReturn(t *testing.T) {
	ctx := context.Background()
	s, mem := openCrashable(t)
	n := importChunk + 10 // two chunks
	insts := make([]push.Installation, n)
	for i := range insts {
		insts[i] = importInst(fmt.Sprintf("o%d", i), "", fmt.Sprintf("iid%d", i), int64(i+1), `{"v":1}`)
	}
	out, _ := runImport(t, s, insts)
	for i, o := range out {
		if o != store.ImportStored {
			t.Fatalf("outcome of row %d = %v", i, o)
		}
	}
	after := crashReopen(t, mem)
	for i := range insts {
		oid := insts[i].ObjectID
		if _, err := after.GetInstallation(ctx, "app", oid); err != nil {
			t.Fatalf("installation %s after the crash: %v", oid, err)
		}
		if got, err := after.LookupDevice(ctx, "app", push.KindIID, insts[i].InstallationID); err != nil || got != oid {
			t.Fatalf("device row of %s after the crash = %q, %v", oid, got, err)
		}
	}
}
