package cassandra

import (
	"context"
	"testing"

	"github.com/pushd/pushd/push"
)

// receiptCases: a receipt reads the record and the devices' marks, marks only the new devices
// and adds them to the channel's arrivals in one counter update; a missing record or devices
// marked before write nothing; the channel's arrivals read back beside the own channel's.
func receiptCases(t *testing.T) {
	ctx := context.Background()
	count := func(ids ...string) func(s *Store) error {
		return func(s *Store) error {
			_, err := s.CountReceipts(ctx, "a", "n1", push.ChannelMi, ids, t0)
			return err
		}
	}
	alive := fixed(reply{row: []any{"d", t0}})
	t.Run("receipts: new devices marked and counted once, repeats dropped", func(t *testing.T) {
		calls, err := runCase(t, script{
			cqlNotifGetID:   alive,
			cqlReceiptMarks: fixed(reply{rows: [][]any{{"r2"}}}),
		}, count("r1", "r2", "r1", ""))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlNotifGetID, "a", "n1"),
			one("iter", cqlReceiptMarks, "a", "n1", push.ChannelMi, []string{"r1", "r2"}),
			one("exec", cqlReceiptMarkPut, "a", "n1", push.ChannelMi, "r1", receiptMarkTTL),
			one("exec", cqlReceiptCountAdd, int64(1), "a", "n1", push.ChannelMi))
	})
	t.Run("receipts: every device marked before writes nothing", func(t *testing.T) {
		calls, err := runCase(t, script{cqlNotifGetID: alive, cqlReceiptMarks: fixed(reply{rows: [][]any{{"r1"}}})}, count("r1"))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlNotifGetID, "a", "n1"),
			one("iter", cqlReceiptMarks, "a", "n1", push.ChannelMi, []string{"r1"}))
	})
	t.Run("receipts: a missing record counts nothing", func(t *testing.T) {
		calls, err := runCase(t, script{}, count("r1"))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("scan", cqlNotifGetID, "a", "n1"))
	})
	t.Run("receipts: the vendors' arrivals read back beside the own channel's counts", func(t *testing.T) {
		n := push.Notification{AppID: "a", ObjectID: "n1"}
		_, err := runCase(t, script{cqlDirectCountList: fixed(reply{rows: [][]any{
			{push.ChannelDirect, "sent", int64(2)}, {push.ChannelMi, "arrivals", int64(3)}, {push.ChannelHMS, "arrivals", int64(1)},
		}})}, func(s *Store) error { return s.withDirectCounts(ctx, &n) })
		if err != nil {
			t.Fatal(err)
		}
		want := push.Counts{push.ChannelDirect: {Sent: 2}, push.ChannelMi: {Arrivals: 3}, push.ChannelHMS: {Arrivals: 1}}
		if len(n.Counts) != len(want) {
			t.Fatalf("counts = %+v; want %+v", n.Counts, want)
		}
		for ch, w := range want {
			if !n.Counts[ch].Equal(w) {
				t.Fatalf("counts = %+v; want %+v", n.Counts, want)
			}
		}
	})
}
