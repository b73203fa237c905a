package pebble

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// tMarketing keys a device's marketing pushes of its last counted day (marketing_counts):
//
//	'K' app deviceId → day, then the push ids counted that day, "\n"-separated
//
// One row per device, rewritten when its day changes, so no sweep is needed.
const tMarketing = 'K'

func marketingKey(dst []byte, app, device string) []byte {
	return appendStr(appendStr(append(dst, tMarketing), app), device)
}

// CountMarketing implements store.Store: under the devices' stripes, a read per device and
// one synced batch of the rows that changed.
func (s *Store) CountMarketing(ctx context.Context, appID, day, pushID string, limit int, devices []string, allowed []bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if len(allowed) < len(devices) {
		panic("BUG: CountMarketing needs an allowed slot per device")
	}
	idx := make([]int, len(devices))
	for i, d := range devices {
		idx[i] = stripeOf("K", appID, d)
	}
	defer s.locks.lockAll(idx)()
	b := s.db.NewBatch()
	defer b.Close()
	seen := make(map[string]bool, len(devices)) // a device listed twice: its first answer
	var key, v []byte
	for i, d := range devices {
		if ok, dup := seen[d]; dup {
			allowed[i] = ok
			continue
		}
		key = marketingKey(key[:0], appID, d)
		var (
			found bool
			err   error
		)
		if v, found, err = s.getInto(v[:0], key); err != nil {
			return fmt.Errorf("cannot read the marketing count of device %s of app %s: %w", d, appID, err)
		}
		ids := []string(nil)
		if found {
			if rowDay, rest, _ := strings.Cut(string(v), "\n"); rowDay == day && rest != "" {
				ids = strings.Split(rest, "\n")
			}
		}
		switch {
		case slices.Contains(ids, pushID):
			allowed[i] = true
		case len(ids) >= limit:
			allowed[i] = false
		default:
			allowed[i] = true
			row := day + "\n" + strings.Join(append(ids, pushID), "\n")
			if err := b.Set(key, []byte(row), nil); err != nil {
				return fmt.Errorf("cannot count a marketing push of app %s: %w", appID, err)
			}
		}
		seen[d] = allowed[i]
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot count a marketing push of app %s: %w", appID, err)
	}
	return nil
}
