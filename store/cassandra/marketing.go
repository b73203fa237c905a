package cassandra

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
)

const (
	cqlMarketingGet = `SELECT device_id, push_id FROM marketing_counts WHERE app_id = ? AND day = ? AND device_id IN ?`
	cqlMarketingAdd = `INSERT INTO marketing_counts (app_id, day, device_id, push_id) VALUES (?, ?, ?, ?) USING TTL ?`
)

// marketingKeep is how long a device's day of marketing counts is kept: its day in any time
// zone, and the next.
const marketingKeep = 48 * time.Hour

// CountMarketing implements store.Store: one read of the devices' rows of day, then one
// logged batch inserting pushID's row of the devices it may reach. Two pushes counted at
// the same instant on two nodes can both see a device below its cap (store.Store says so).
func (s *Store) CountMarketing(ctx context.Context, appID, day, pushID string, limit int, devices []string, allowed []bool) error {
	if len(allowed) < len(devices) {
		panic("BUG: CountMarketing needs an allowed slot per device")
	}
	if len(devices) == 0 {
		return nil
	}
	uniq := slices.Clone(devices)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	have := make(map[string][]string, len(uniq))
	it := s.q(ctx, cqlMarketingGet, appID, day, uniq).Iter()
	var dev, pid string
	for it.Scan(&dev, &pid) {
		have[dev] = append(have[dev], pid)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cannot read the marketing counts of app %s: %w", appID, err)
	}
	ok := make(map[string]bool, len(uniq))
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	ttl := ttlSeconds(marketingKeep)
	added := 0
	for _, d := range uniq {
		ids := have[d]
		switch {
		case slices.Contains(ids, pushID):
			ok[d] = true
		case len(ids) >= limit:
			ok[d] = false
		default:
			ok[d] = true
			b.Query(cqlMarketingAdd, appID, day, d, pushID, ttl)
			added++
		}
	}
	if added > 0 {
		if err := s.s.ExecuteBatch(b); err != nil {
			return fmt.Errorf("cannot count a marketing push of app %s: %w", appID, err)
		}
	}
	for i, d := range devices {
		allowed[i] = ok[d]
	}
	return nil
}

// MarketingCountsRace tells the contract suite that concurrent CountMarketing calls may take a
// device past its cap (a read, then a write, without a condition).
func (s *Store) MarketingCountsRace() {}
