package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// The CQL-level half of the review (cql_test.go is the static half): the store runs over a
// recording session (session_test.go), and each case checks the statements it ran, in order,
// with their bound values, consistency and retry policy. No server is involved: what Cassandra
// does with the statements is the contract suite's part (store_test.go, PUSHD_CASSANDRA_HOSTS).

var t0 = time.UnixMilli(1_700_000_000_000).UTC()

// anyv in an expectation matches any bound value (documents, encoded routes).
var anyv = &struct{ any }{}

// step is one expected call: op (exec, scan, cas, iter, batch) and its statements.
type step struct {
	op    string
	stmts []bound
}

type bound struct {
	stmt string
	args []any
}

func one(op, stmt string, args ...any) step { return step{op, []bound{{stmt, args}}} }

func inBatch(stmts ...bound) step { return step{"batch", stmts} }

func b(stmt string, args ...any) bound { return bound{stmt, args} }

func wantCalls(t *testing.T, got []*call, want ...step) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("ran %d calls, want %d:\n%s", len(got), len(want), describe(got))
		return
	}
	for i, w := range want {
		g := got[i]
		gs := g.batch
		if g.op != "batch" {
			gs = []batchStmt{{g.stmt, g.args}}
		}
		if g.op != w.op || len(gs) != len(w.stmts) {
			t.Errorf("call %d: %s of %d statements, want %s of %d:\n%s", i, g.op, len(gs), w.op, len(w.stmts), describe(got))
			continue
		}
		for j, ws := range w.stmts {
			if gs[j].stmt != ws.stmt {
				t.Errorf("call %d.%d: ran\n\t%s\nwant\n\t%s", i, j, gs[j].stmt, ws.stmt)
				continue
			}
			if len(gs[j].args) != len(ws.args) {
				t.Errorf("call %d.%d %.40q: bound %v, want %v", i, j, ws.stmt, gs[j].args, ws.args)
				continue
			}
			for k, wa := range ws.args {
				if wa == anyv {
					continue
				}
				ga := gs[j].args[k]
				if gt, ok := ga.(time.Time); ok {
					if wt, ok := wa.(time.Time); ok && gt.Equal(wt) {
						continue
					}
				}
				if !reflect.DeepEqual(ga, wa) {
					t.Errorf("call %d.%d %.40q: value %d = %#v, want %#v", i, j, ws.stmt, k, ga, wa)
				}
			}
		}
	}
}

func describe(calls []*call) string {
	var sb strings.Builder
	for i, c := range calls {
		if c.op == "batch" {
			fmt.Fprintf(&sb, "%d batch\n", i)
			for _, s := range c.batch {
				fmt.Fprintf(&sb, "\t%s %v\n", s.stmt, s.args)
			}
			continue
		}
		fmt.Fprintf(&sb, "%d %s %s %v\n", i, c.op, c.stmt, c.args)
	}
	return sb.String()
}

// checkPolicies: every statement runs at LOCAL_QUORUM (reads that decide an LWT at
// LOCAL_SERIAL) with the retry policy retryable gives it.
func checkPolicies(t *testing.T, calls []*call) {
	t.Helper()
	for _, c := range calls {
		if c.op == "batch" {
			continue
		}
		want := retryPolicy
		if !retryable(c.stmt) {
			want = nil
		}
		if c.retry != want {
			t.Errorf("%q runs with retry policy %v, want %v", c.stmt, c.retry, want)
		}
		if c.cons != gocql.LocalQuorum && !(c.op == "scan" && c.cons == serialRead) {
			t.Errorf("%q runs at %v", c.stmt, c.cons)
		}
		if c.serial != gocql.LocalSerial {
			t.Errorf("%q has serial consistency %v", c.stmt, c.serial)
		}
	}
}

// script answers calls by statement; what it does not name gets the zero reply.
type script map[string]func(c *call) reply

func (s script) answer(c *call) reply {
	if f, ok := s[c.stmt]; ok {
		return f(c)
	}
	return reply{}
}

func fixed(r reply) func(*call) reply { return func(*call) reply { return r } }

var writeTimeout = &gocql.RequestErrWriteTimeout{WriteType: "CAS"}

// exercised collects the statements the cases ran, for the coverage check at the end.
var exercised = map[string]bool{}

func runCase(t *testing.T, sc script, fn func(s *Store) error) ([]*call, error) {
	t.Helper()
	rec, s := newRecSession(t, sc.answer)
	err := fn(s)
	calls := rec.since(0)
	checkPolicies(t, calls)
	for _, c := range calls {
		exercised[c.stmt] = true
		for _, b := range c.batch {
			exercised[b.stmt] = true
		}
	}
	return calls, err
}

func TestStoreCassandraStatements(t *testing.T) {
	ctx := context.Background()
	inst := func(oid, tok string, channels ...string) push.Installation {
		return push.Installation{Route: push.Route{ObjectID: oid, DeviceType: "ios", DeviceToken: tok, Channels: channels, UpdatedAt: t0.UnixMilli()},
			CreatedAt: t0.UnixMilli() - 1000, Doc: []byte(`{"objectId":"` + oid + `"}`)}
	}
	oldRow := func(in push.Installation) []any {
		return []any{push.Bucket(in.ObjectID, 256), store.AppendRoute(nil, &in.Route), in.CreatedAt, in.Doc}
	}

	t.Run("put new installation: its device id claimed by LWT, then one logged batch of the row and its index rows", func(t *testing.T) {
		in := inst("o1", "tok1", "news")
		bk := push.Bucket("o1", 256)
		calls, err := runCase(t, script{}, func(s *Store) error { return s.PutInstallation(ctx, "a", 256, in) })
		if err != nil {
			t.Fatal(err)
		}
		route := store.AppendRoute(nil, &in.Route)
		// The claimed row is not rewritten in the batch: the LWT wrote it.
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			one("cas", cqlDeviceClaim, "a", "token", "tok1", "o1"),
			inBatch(
				b(cqlDeadDelete, "a", "tok1"),
				b(cqlInstInsert, "a", "o1", bk, "ios", route, in.CreatedAt, in.UpdatedAt, in.Doc),
				b(cqlBucketInsert, "a", bk, "ios", "o1", route, in.Doc),
				b(cqlChannelInsert, "a", "news", bk, "ios", "o1", route, in.Doc),
			))
	})

	t.Run("put changed installation: the new token claimed, old index rows deleted in the batch", func(t *testing.T) {
		old := inst("o1", "tok1", "a", "b")
		in := inst("o1", "tok2", "b", "c")
		bk := push.Bucket("o1", 256)
		calls, err := runCase(t, script{cqlInstGet: fixed(reply{row: oldRow(old)})}, func(s *Store) error {
			return s.PutInstallation(ctx, "a", 256, in)
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			one("cas", cqlDeviceClaim, "a", "token", "tok2", "o1"),
			inBatch(
				b(cqlChannelDelete, "a", "a", bk, "ios", "o1"),
				b(cqlDeviceDelete, "a", "token", "tok1"),
				b(cqlDeadDelete, "a", "tok2"),
				b(cqlInstInsert, "a", "o1", bk, "ios", anyv, in.CreatedAt, in.UpdatedAt, in.Doc),
				b(cqlBucketInsert, "a", bk, "ios", "o1", anyv, in.Doc),
				b(cqlChannelInsert, "a", "b", bk, "ios", "o1", anyv, in.Doc),
				b(cqlChannelInsert, "a", "c", bk, "ios", "o1", anyv, in.Doc),
			))
	})

	t.Run("delete installation: every row in one batch", func(t *testing.T) {
		old := inst("o1", "tok1", "a")
		bk := push.Bucket("o1", 256)
		calls, err := runCase(t, script{cqlInstGet: fixed(reply{row: oldRow(old)})}, func(s *Store) error {
			return s.DeleteInstallation(ctx, "a", 256, "o1")
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlInstGet, "a", "o1"),
			inBatch(
				b(cqlInstDelete, "a", "o1"),
				b(cqlBadgeDelete, "a", "o1"),
				b(cqlBucketDelete, "a", bk, "ios", "o1"),
				b(cqlChannelDelete, "a", "a", bk, "ios", "o1"),
				b(cqlDeviceDelete, "a", "token", "tok1"),
			))
	})

	t.Run("create app whose LWT timed out but applied: the SERIAL read says created", func(t *testing.T) {
		var doc []byte
		calls, err := runCase(t, script{
			cqlAppInsert: func(c *call) reply { doc = c.args[1].([]byte); return reply{err: writeTimeout} },
			cqlAppGet:    func(c *call) reply { return reply{row: []any{doc}} },
		}, func(s *Store) error { return s.CreateApp(ctx, push.App{ID: "a", Name: "shop"}) })
		if err != nil {
			t.Fatalf("CreateApp = %v, want created", err)
		}
		wantCalls(t, calls, one("cas", cqlAppInsert, "a", anyv), one("scan", cqlAppGet, "a"))
		if calls[1].cons != serialRead {
			t.Errorf("the read after the timeout ran at %v, want SERIAL", calls[1].cons)
		}
	})

	t.Run("create app whose LWT timed out and did not apply: an error, not ErrExists", func(t *testing.T) {
		_, err := runCase(t, script{cqlAppInsert: fixed(reply{err: writeTimeout})}, func(s *Store) error {
			return s.CreateApp(ctx, push.App{ID: "a"})
		})
		if err == nil || errors.Is(err, store.ErrExists) {
			t.Fatalf("CreateApp = %v, want the timeout", err)
		}
	})

	t.Run("a timed-out req_id claim that left no row is an error", func(t *testing.T) {
		_, err := runCase(t, script{cqlReqInsert: fixed(reply{err: writeTimeout})}, func(s *Store) error {
			_, _, err := s.ClaimReqID(ctx, "a", "r1", store.ReqClaim{ObjectID: "p1", CreatedAt: t0}, 5*time.Minute)
			return err
		})
		if !errors.Is(err, writeTimeout) {
			t.Fatalf("ClaimReqID = %v, want the timeout", err)
		}
	})

	t.Run("req_id claim with TTL; a timed-out claim that applied is ours", func(t *testing.T) {
		var claimed []any
		calls, err := runCase(t, script{
			cqlReqInsert: func(c *call) reply { claimed = c.args; return reply{err: writeTimeout} },
			cqlReqGet:    func(c *call) reply { return reply{row: []any{claimed[2], claimed[3]}} },
		}, func(s *Store) error {
			_, ok, err := s.ClaimReqID(ctx, "a", "r1", store.ReqClaim{ObjectID: "p1", CreatedAt: t0}, 5*time.Minute)
			if err == nil && !ok {
				err = fmt.Errorf("claim refused")
			}
			return err
		})
		if err != nil {
			t.Fatalf("ClaimReqID: %v, want claimed", err)
		}
		wantCalls(t, calls, one("cas", cqlReqInsert, "a", "r1", "p1", t0, 300), one("scan", cqlReqGet, "a", "r1"))
	})

	t.Run("a timed-out req_id claim that found another's: that claim is answered", func(t *testing.T) {
		calls, err := runCase(t, script{
			cqlReqInsert: fixed(reply{err: writeTimeout}),
			cqlReqGet:    fixed(reply{row: []any{"p0", t0.Add(-time.Second)}}),
		}, func(s *Store) error {
			got, ok, err := s.ClaimReqID(ctx, "a", "r1", store.ReqClaim{ObjectID: "p1", CreatedAt: t0}, 5*time.Minute)
			if err == nil && (ok || got.ObjectID != "p0") {
				err = fmt.Errorf("claim = %v %v, want p0's", got, ok)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("cas", cqlReqInsert, "a", "r1", "p1", t0, 300), one("scan", cqlReqGet, "a", "r1"))
	})

	t.Run("an expired req_id claim is taken over with a compare-and-set", func(t *testing.T) {
		old := t0.Add(-6 * time.Minute)
		calls, err := runCase(t, script{
			cqlReqInsert: fixed(reply{notApp: true, prev: map[string]any{"object_id": "p0", "created_at": old}}),
		}, func(s *Store) error {
			_, ok, err := s.ClaimReqID(ctx, "a", "r1", store.ReqClaim{ObjectID: "p1", CreatedAt: t0}, 5*time.Minute)
			if err == nil && !ok {
				err = fmt.Errorf("claim refused")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("cas", cqlReqInsert, "a", "r1", "p1", t0, 300), one("cas", cqlReqCAS, 300, "p1", t0, "a", "r1", old))
	})

	rec := func(status string) push.Notification {
		return push.Notification{ObjectID: "n1", AppID: "a", NotificationID: "nid", Status: status, CreatedAt: t0, UpdatedAt: t0}
	}

	t.Run("create push record: claim by LWT (timed out, applied), rows in a batch without TTL", func(t *testing.T) {
		var claimed []any
		calls, err := runCase(t, script{
			cqlNotifClaimID: func(c *call) reply { claimed = c.args; return reply{err: writeTimeout} },
			cqlNotifGetID:   func(c *call) reply { return reply{row: []any{claimed[2], claimed[3].(time.Time)}} },
		}, func(s *Store) error { return s.CreateNotification(ctx, rec(push.StatusInQueue)) })
		if err != nil {
			t.Fatalf("CreateNotification: %v", err)
		}
		day := "2023-11-14"
		wantCalls(t, calls,
			one("cas", cqlNotifClaimID, "a", "n1", day, t0, 0),
			one("scan", cqlNotifGetID, "a", "n1"),
			inBatch(
				b(cqlNotifInsert, 0, anyv, push.StatusInQueue, "a", day, t0, "n1"),
				b(cqlNIDInsert, "a", "nid", "n1", 0),
			))
	})

	t.Run("update push record: CAS on version, a timed-out CAS that applied is not run again, finished rows get the TTL", func(t *testing.T) {
		day := "2023-11-14"
		doc, _ := json.Marshal(rec(push.StatusInProcess))
		var written []byte
		ttl := int(push.RecordRetention / time.Second)
		reads := 0
		calls, err := runCase(t, script{
			cqlNotifGetID: fixed(reply{row: []any{day, t0}}),
			cqlNotifGet: func(c *call) reply {
				if reads++; reads == 1 {
					return reply{row: []any{doc, int64(4)}}
				}
				return reply{row: []any{written, int64(5)}}
			},
			cqlNotifCAS: func(c *call) reply { written = c.args[1].([]byte); return reply{err: writeTimeout} },
		}, func(s *Store) error {
			_, err := s.UpdateNotification(ctx, "a", "n1", func(n *push.Notification) error {
				n.Status = push.StatusDone
				return nil
			})
			return err
		})
		if err != nil {
			t.Fatalf("UpdateNotification: %v", err)
		}
		wantCalls(t, calls,
			one("scan", cqlNotifGetID, "a", "n1"),
			one("scan", cqlNotifGet, "a", day, t0, "n1"),
			one("cas", cqlNotifCAS, ttl, anyv, push.StatusDone, int64(5), "a", day, t0, "n1", int64(4)),
			one("scan", cqlNotifGet, "a", day, t0, "n1"),
			inBatch(
				b(cqlNIDInsert, "a", "nid", "n1", ttl),
				b(cqlNotifPutID, "a", "n1", day, t0, ttl),
			),
			one("iter", cqlDirectCountList, "a", "n1"))
		if calls[3].cons != serialRead {
			t.Errorf("the read after the timeout ran at %v, want SERIAL", calls[3].cons)
		}
	})

	t.Run("counters: added once, never retried, outside batches", func(t *testing.T) {
		calls, err := runCase(t, script{cqlVolumeAdd: fixed(reply{err: &gocql.RequestErrWriteTimeout{WriteType: "COUNTER"}})}, func(s *Store) error {
			_, err := s.AddDailyVolume(ctx, "a", "2023-11-14", 7)
			return err
		})
		if err == nil {
			t.Fatal("a timed-out counter update reported success")
		}
		wantCalls(t, calls, one("exec", cqlVolumeAdd, int64(7), "a", "2023-11-14"))
		if calls[0].retry != nil {
			t.Errorf("the counter update runs with retry policy %v", calls[0].retry)
		}
		msg := push.DirectMessage{AppID: "a", InstallationID: "i1", ID: "n1", Expires: t0.Add(time.Hour).UnixMilli()}
		calls, err = runCase(t, script{cqlNotifGetID: fixed(reply{row: []any{"2023-11-14", t0}})}, func(s *Store) error {
			_, _, err := s.CacheDirect(ctx, msg, t0, 10)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("scan", cqlOfflineGet, "a", "i1", "n1"),
			one("scan", cqlNotifGetID, "a", "n1"),
			one("iter", cqlOfflineList, "a", "i1"),
			one("cas", cqlOfflineInsert, "a", "i1", "n1", offlineCached, t0.UnixNano(), anyv, 3600),
			one("exec", cqlDirectCountAdd, int64(1), "a", "n1", "sent"))
	})

	t.Run("a timed-out offline insert that did not apply counts nothing", func(t *testing.T) {
		msg := push.DirectMessage{AppID: "a", InstallationID: "i1", ID: "n1"}
		calls, err := runCase(t, script{
			cqlNotifGetID:    fixed(reply{row: []any{"2023-11-14", t0}}),
			cqlOfflineInsert: fixed(reply{err: writeTimeout}),
			cqlOfflineGetSeq: fixed(reply{row: []any{offlineCached, int64(1)}}), // another copy's
		}, func(s *Store) error {
			out, _, err := s.CacheDirect(ctx, msg, t0, 10)
			if err == nil && out != push.CacheDuplicate {
				err = fmt.Errorf("outcome %v, want a duplicate", out)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if c.stmt == cqlDirectCountAdd {
				t.Error("counted a message it did not cache")
			}
		}
	})

	t.Run("lease: acquired by LWT without TTL; a timed-out LWT decided at SERIAL", func(t *testing.T) {
		var ins []any
		reads := 0
		calls, err := runCase(t, script{
			cqlLeaseGet: func(c *call) reply {
				if reads++; reads == 1 {
					return reply{}
				}
				return reply{row: []any{ins[1], int64(1), ins[2]}}
			},
			cqlLeaseInsert: func(c *call) reply { ins = c.args; return reply{err: writeTimeout} },
		}, func(s *Store) error {
			l, ok, err := s.AcquireLease(ctx, "scheduler", "n1", t0, 10*time.Second)
			if err == nil && (!ok || l.Epoch != 1) {
				err = fmt.Errorf("lease %+v %v, want epoch 1", l, ok)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("scan", cqlLeaseGet, "scheduler"), one("cas", cqlLeaseInsert, "scheduler", "n1", t0.Add(10*time.Second)),
			one("scan", cqlLeaseGet, "scheduler"))
	})

	t.Run("gateway registry: one partition, rows written with the advertisement's TTL", func(t *testing.T) {
		exp := time.Now().Add(15 * time.Second).UTC()
		calls, err := runCase(t, script{
			cqlGatewayList: fixed(reply{rows: [][]any{
				{"n2", "ws://b/1.1/connect", []int{1}, t0.Add(-time.Second)}, // expired, not yet gone by TTL
				{"n1", "ws://a/1.1/connect", []int{0, 2}, t0.Add(time.Minute)},
			}}),
		}, func(s *Store) error {
			if err := s.PutGateway(ctx, store.Gateway{Node: "n1", URL: "ws://a/1.1/connect", Partitions: []int{0, 2}, Expires: exp}); err != nil {
				return err
			}
			gs, err := s.Gateways(ctx, t0)
			if err != nil {
				return err
			}
			if len(gs) != 1 || gs[0].Node != "n1" || !slices.Equal(gs[0].Partitions, []int{0, 2}) {
				return fmt.Errorf("gateways %+v, want n1 alone", gs)
			}
			return s.DeleteGateway(ctx, "n1")
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("exec", cqlGatewayPut, "gateways", "n1", "ws://a/1.1/connect", []int{0, 2}, exp, anyv),
			one("iter", cqlGatewayList, "gateways"),
			one("exec", cqlGatewayDelete, "gateways", "n1"))
		if ttl, ok := calls[0].args[5].(int); !ok || ttl < 14 || ttl > 15 {
			t.Errorf("advertisement written with TTL %v, want 15 s (its expiry, rounded up)", calls[0].args[5])
		}
	})

	t.Run("cancel of a scheduled push whose LWT timed out and applied", func(t *testing.T) {
		calls, err := runCase(t, script{
			// The first read finds the row; the SERIAL read after the timeout finds it gone.
			cqlSchedIDGet: func(c *call) reply {
				if c.cons == serialRead {
					return reply{}
				}
				return reply{row: []any{3, t0}}
			},
			cqlSchedIDDelete: fixed(reply{err: writeTimeout}),
		}, func(s *Store) error {
			return s.DeleteScheduled(ctx, "a", 19)
		})
		if err != nil {
			t.Fatalf("DeleteScheduled: %v", err)
		}
		wantCalls(t, calls, one("scan", cqlSchedIDGet, "a", int64(19)), one("cas", cqlSchedIDDelete, "a", int64(19)),
			one("scan", cqlSchedIDGet, "a", int64(19)), one("exec", cqlSchedDelete, 3, t0, int64(19)))
	})

	t.Run("NextID: a timed-out advance is taken as lost, never handed out twice", func(t *testing.T) {
		reads := 0
		calls, err := runCase(t, script{
			cqlIDGet: func(c *call) reply {
				if reads++; reads == 1 {
					return reply{row: []any{int64(7)}}
				}
				return reply{row: []any{int64(8)}} // the timed-out advance applied
			},
			cqlIDCAS: func(c *call) reply {
				if c.args[0] == int64(8) {
					return reply{err: writeTimeout}
				}
				return reply{}
			},
		}, func(s *Store) error {
			id, err := s.NextID(ctx, "scheduled")
			if err == nil && id != 9 {
				err = fmt.Errorf("id %d, want 9", id)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("scan", cqlIDGet, "scheduled"), one("cas", cqlIDCAS, int64(8), "scheduled", int64(7)),
			one("scan", cqlIDGet, "scheduled"), one("cas", cqlIDCAS, int64(9), "scheduled", int64(8)))
		for _, i := range []int{0, 2} {
			if calls[i].cons != serialRead {
				t.Errorf("read %d of the counter at %v, want SERIAL", i, calls[i].cons)
			}
		}
	})

	t.Run("marketing counts: one read of the batch's devices, one logged batch of the rows added", func(t *testing.T) {
		// d1 already had n1 (this push: counted), d2 had its cap of other pushes, d3 nothing;
		// d3 is listed twice and counted once.
		rows := script{cqlMarketingGet: fixed(reply{rows: [][]any{{"d1", "n1"}, {"d2", "n0"}, {"d2", "n9"}}})}
		allowed := make([]bool, 4)
		calls, err := runCase(t, rows, func(s *Store) error {
			return s.CountMarketing(ctx, "a", "2023-11-14", "n1", 2, []string{"d3", "d1", "d2", "d3"}, allowed)
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls,
			one("iter", cqlMarketingGet, "a", "2023-11-14", []string{"d1", "d2", "d3"}),
			inBatch(b(cqlMarketingAdd, "a", "2023-11-14", "d3", "n1", 172800)))
		if want := []bool{true, true, false, true}; !slices.Equal(allowed, want) {
			t.Errorf("allowed %v, want %v", allowed, want)
		}
	})

	t.Run("task progress: one row per task", func(t *testing.T) {
		p := push.TaskProgress{JobID: "j", TaskID: "t", Cursor: []byte("c"), Done: true, Epoch: 2}
		calls, err := runCase(t, script{}, func(s *Store) error { return s.PutTaskProgress(ctx, p) })
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("exec", cqlProgressPut, "j", "t", []byte("c"), []byte("null"), true, int64(2)))
	})

	t.Run("every other method runs", func(t *testing.T) {
		// Default answers (nothing found) and a few rows, to reach every statement; the
		// checks here are the generic ones (bind markers, consistency, retry policy).
		in := inst("o1", "tok1", "a")
		in.UpdatedAt = time.Now().UnixMilli() // a live installation: its badge is written
		pending := rec(push.StatusInQueue)
		pending.PendingJob = &push.Job{ID: "j"}
		pdoc, _ := json.Marshal(pending)
		cached, _ := json.Marshal(push.DirectMessage{AppID: "a", InstallationID: "i", ID: "m1", Seq: 1})
		sc := script{
			cqlInstGet:            fixed(reply{row: oldRow(in)}),
			cqlNotifGetID:         fixed(reply{row: []any{"2023-11-14", t0}}),
			cqlNotifGet:           fixed(reply{row: []any{pdoc, int64(1)}}),
			cqlOfflineList:        fixed(reply{rows: [][]any{{"m1", offlineCached, int64(1), cached}}}),
			cqlInactiveCandidates: fixed(reply{rows: [][]any{{"o1", store.AppendRoute(nil, &in.Route)}}}),
			cqlScanBucket:         fixed(reply{rows: [][]any{{store.AppendRoute(nil, &in.Route), in.Doc, "ios", "o1"}}}),
			cqlNIDList:            fixed(reply{rows: [][]any{{"n1"}}}),
			cqlPendingList:        fixed(reply{rows: [][]any{{t0, "n1"}}}),
			cqlSchedIDGet:         fixed(reply{row: []any{3, t0.Add(-time.Hour)}}),
			cqlOfflineGet: func(c *call) reply {
				if c.args[2] == "m" {
					return reply{row: []any{offlineCached}}
				}
				return reply{}
			},
			cqlLeaseGet:      fixed(reply{row: []any{"n1", int64(3), t0.Add(time.Minute)}}),
			cqlSchedClaimGet: fixed(reply{row: []any{3, (*int64)(nil)}}),
			cqlIDGet:         fixed(reply{}),
		}
		l := store.Lease{Name: "x", Owner: "n1", Epoch: 3}
		_, err := runCase(t, sc, func(s *Store) error {
			for i, f := range []func() error{
				func() error { return s.EnsureTables(ctx) },
				func() error { return s.PutApp(ctx, push.App{ID: "a"}) },
				func() error { _, err := s.GetApp(ctx, "a"); return ignoreNotFound(err) },
				func() error { _, err := s.ListApps(ctx); return err },
				func() error { _, err := s.LookupDevice(ctx, "a", push.KindToken, "t"); return ignoreNotFound(err) },
				func() error {
					return s.Scan(ctx, store.ScanRange{AppID: "a", Bucket: 1}, func(*store.Row) error { return nil })
				},
				func() error { _, err := s.DeleteInactive(ctx, "a", 1, time.Now(), 10); return err },
				func() error { return s.IncrementBadges(ctx, "a", 256, "p", []string{"o1"}, make([]int64, 1)) },
				func() error { return s.MarkDeadToken(ctx, "a", "t", time.Now()) },
				func() error { _, err := s.DeadToken(ctx, "a", "t"); return ignoreNotFound(err) },
				func() error { _, err := s.GetNotification(ctx, "a", "n1"); return ignoreNotFound(err) },
				func() error { return ignoreNotFound(s.DeleteNotification(ctx, "a", "n1")) },
				func() error { return s.ListNotifications(ctx, "a", func(*push.Notification) error { return nil }) },
				func() error { _, err := s.NotificationsByNID(ctx, "a", "nid"); return err },
				func() error {
					return s.CreateScheduledNotification(ctx, pending, push.Scheduled{ID: 19, AppID: "a", DueAt: t0})
				},
				func() error { _, err := s.PendingJobs(ctx, "a", t0, 10); return err },
				func() error { return s.PutScheduled(ctx, push.Scheduled{ID: 19, AppID: "a", DueAt: t0}) },
				func() error { _, err := s.GetScheduled(ctx, "a", 19); return ignoreNotFound(err) },
				func() error { _, err := s.ListScheduled(ctx, "a"); return err },
				func() error { _, err := s.DueScheduled(ctx, t0, 10); return err },
				func() error { return s.ClaimScheduled(ctx, l, "a", 19) },
				func() error { _, err := s.NextID(ctx, "x"); return err },
				func() error { return s.ReleaseReqID(ctx, "a", "r", "p") },
				func() error { _, err := s.DailyVolume(ctx, "a", "d"); return err },
				func() error { _, err := s.GetTaskProgress(ctx, "j", "t"); return ignoreNotFound(err) },
				func() error { _, err := s.RenewLease(ctx, l, t0, time.Minute); return err },
				func() error { return s.ReleaseLease(ctx, l) },
				func() error { _, err := s.OfflineMessages(ctx, "a", "i", t0); return err },
				func() error { _, err := s.AckDirect(ctx, "a", "i", []string{"m"}, t0); return err },
				func() error {
					_, _, err := s.CacheDirect(ctx, push.DirectMessage{AppID: "a", InstallationID: "i", ID: "m2"}, t0, 1)
					return err
				},
			} {
				if err := f(); err != nil {
					return fmt.Errorf("call %d: %w", i, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	clusterLimitCases(t) // cluster_test.go: device-id claims, call counts, blocks, members
	presenceCases(t)     // presence_test.go: own-channel presence and its removal with the installation
	vendorQuotaCases(t)  // quota_test.go: vendor quotas and deferred targets
	receiptCases(t)      // receipts_test.go: vendor receipts

	t.Run("every statement was run", func(t *testing.T) {
		if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "/") {
			t.Skip("-run selects some cases only")
		}
		// The scan variants' texts and values are TestStoreCassandraScanQuery's.
		covered := map[string]bool{"cqlScanBucketAfter": true, "cqlScanBucketDT": true, "cqlScanBucketDTAfter": true,
			"cqlScanChannel": true, "cqlScanChannelAfter": true, "cqlScanChannelDT": true, "cqlScanChannelDTAfter": true}
		var missing []string
		for name, st := range packageStatements(t) {
			if !exercised[st] && !covered[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("statements no case runs (add them to TestStoreCassandraStatements): %v", missing)
		}
	})
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
