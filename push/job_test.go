package push

import (
	"testing"
	"time"
)

func TestJobQueryTime(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fired := created.Add(72 * time.Hour)
	if got := (&Job{CreatedAt: created}).QueryTime(); !got.Equal(created) {
		t.Errorf("a push sent at once counts from %v, want its CreatedAt %v", got, created)
	}
	if got := (&Job{CreatedAt: created, QueryAt: fired}).QueryTime(); !got.Equal(fired) {
		t.Errorf("a scheduled push counts from %v, want when it fired, %v", got, fired)
	}
}
