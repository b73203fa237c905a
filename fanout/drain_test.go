package fanout

import (
	"context"
	"testing"
	"time"
)

func TestFanoutDrainAfterOutlivesCancelByGraceOnly(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := drainAfter(parent, 20*time.Millisecond)
	defer cancel()
	// While the parent lives, no deadline applies.
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("drain context has a deadline while its parent lives")
	}
	cancelParent()
	select {
	case <-ctx.Done():
		t.Fatal("drain context ended with its parent, want it to outlive it")
	default:
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("drain context did not end after the grace period")
	}
	// cancel ends it at once whatever the parent does.
	ctx2, cancel2 := drainAfter(context.Background(), time.Hour)
	cancel2()
	if ctx2.Err() == nil {
		t.Fatal("cancel did not end the drain context")
	}
}
