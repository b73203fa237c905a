package cassandra

import (
	"context"
	"time"
)

// SweepNotifications removes nothing and says 0: Cassandra expires push records by TTL,
// push.RecordRetention after the last write of a finished record (recordTTL), which is the
// rule the Pebble store's sweep applies. It exists so the sweeper can run over either store.
func (s *Store) SweepNotifications(ctx context.Context, appID string, cutoff time.Time, limit int) (int, error) {
	return 0, nil
}
