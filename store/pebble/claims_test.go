package pebble

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/queue/queuetest"
	"github.com/pushd/pushd/store"
)

const claimTTL = 5 * time.Minute

// claimer claims req_ids of app "a" on a store and counts the claims that read Pebble.
type claimer struct {
	t     *testing.T
	s     *Store
	reads int
}

func newClaimer(t *testing.T, s *Store) *claimer {
	c := &claimer{t: t}
	c.use(s)
	return c
}

// openClaimer opens a store on a new directory (for closeReopen) and a claimer on it.
func openClaimer(t *testing.T) (*claimer, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newClaimer(t, s), dir
}

func (c *claimer) use(s *Store) {
	c.s = s
	s.afterClaimRead = func() { c.reads++ }
}

// claim claims reqID for push oid at at, and says whether it was claimed and the push that
// holds it.
func (c *claimer) claim(reqID, oid string, at time.Time) (bool, string) {
	c.t.Helper()
	prev, ok, err := c.s.ClaimReqIDNoSync(context.Background(), "a", reqID, store.ReqClaim{ObjectID: oid, CreatedAt: at}, claimTTL)
	if err != nil {
		c.t.Fatal(err)
	}
	return ok, prev.ObjectID
}

// TestStoreClaimMemoSkipsTheReadOfANewReqID: a req_id nobody claimed is claimed without a read;
// one claimed within the window is still refused (read, then found); after the window it is
// claimed again. Claims made before a reopen are loaded and refuse duplicates the same way.
func TestStoreClaimMemoSkipsTheReadOfANewReqID(t *testing.T) {
	c, dir := openClaimer(t)
	now := time.Now()
	if ok, _ := c.claim("r1", "p1", now); !ok || c.reads != 0 {
		t.Fatalf("a new req_id: claimed %v after %d reads, want claimed without one", ok, c.reads)
	}
	if ok, prev := c.claim("r1", "p2", now.Add(time.Minute)); ok || prev != "p1" || c.reads != 1 {
		t.Fatalf("a duplicate within the window: claimed %v (held by %q) after %d reads; want refused, p1, one read", ok, prev, c.reads)
	}
	if ok, _ := c.claim("r1", "p3", now.Add(claimTTL+time.Second)); !ok {
		t.Fatal("a req_id past its window was not claimed again")
	}
	for i := range 100 {
		c.claim(fmt.Sprintf("n%d", i), "p", now)
	}
	if c.reads != 1 {
		t.Fatalf("%d reads for 100 new req_ids, want none", c.reads-1)
	}
	// Reopened (a crash keeps what the job's synced write made durable; Close keeps all).
	c.use(closeReopen(t, c.s, dir))
	c.reads = 0
	if ok, prev := c.claim("n7", "q", now.Add(time.Minute)); ok || prev != "p" {
		t.Fatalf("after a reopen, a duplicate claimed %v (held by %q); want refused, p", ok, prev)
	}
	if ok, _ := c.claim("fresh", "q", now.Add(time.Minute)); !ok || c.reads != 1 {
		t.Fatalf("after a reopen, a new req_id: claimed %v after %d reads in all, want claimed, only the duplicate read", ok, c.reads)
	}
}

// TestStoreClaimMemoTooManyToLoad: a store holding more claims than the memo loads opens with
// an empty memo that vouches for nothing: every claim reads Pebble, and duplicates are still
// refused.
func TestStoreClaimMemoTooManyToLoad(t *testing.T) {
	defer func(n int) { claimMemoLoad = n }(claimMemoLoad)
	claimMemoLoad = 10
	c, dir := openClaimer(t)
	now := time.Now()
	for i := range 20 {
		c.claim(fmt.Sprintf("r%d", i), "p", now)
	}
	c.use(closeReopen(t, c.s, dir))
	c.reads = 0
	if ok, prev := c.claim("r15", "q", now.Add(time.Minute)); ok || prev != "p" {
		t.Fatalf("a duplicate claimed %v (held by %q); want refused, p", ok, prev)
	}
	if ok, _ := c.claim("new", "q", now.Add(time.Minute)); !ok || c.reads != 2 {
		t.Fatalf("a new req_id claimed %v after %d reads in all; want claimed, each claim read", ok, c.reads)
	}
	if n := c.s.claims.len(); n != 1 {
		t.Fatalf("memo holds %d keys, want only the claim made since the open", n)
	}
}

// TestStoreClaimMemoSweepsAndOverflows: expired claims leave the memo as it grows, and a memo
// too full to hold its live claims forgets them and reads Pebble until they have all expired;
// duplicates are refused throughout.
func TestStoreClaimMemoSweepsAndOverflows(t *testing.T) {
	c := newClaimer(t, openTest(t))
	now := time.Now()
	// Claims made long ago (the caller's time): expired by the store's clock.
	old := now.Add(-time.Hour)
	for i := range 1500 {
		c.claim(fmt.Sprintf("old%d", i), "p", old)
	}
	if n := c.s.claims.len(); n >= 1024 {
		t.Fatalf("memo holds %d keys, want the expired ones swept at its first sweep", n)
	}
	defer func(n int) { claimMemoMax = n }(claimMemoMax)
	claimMemoMax = 1100
	c.reads = 0
	for i := range 1500 {
		if ok, _ := c.claim(fmt.Sprintf("live%d", i), "p", now); !ok {
			t.Fatalf("live%d not claimed", i)
		}
	}
	reads := c.reads
	if reads == 0 {
		t.Fatal("a memo that overflowed still vouched for the claims it forgot")
	}
	for _, r := range []string{"live0", "live1099", "live1499"} {
		if ok, prev := c.claim(r, "q", now.Add(time.Minute)); ok || prev != "p" {
			t.Fatalf("%s: a duplicate claimed %v (held by %q); want refused, p", r, ok, prev)
		}
	}
	if c.reads != reads+3 {
		t.Fatalf("%d reads for 3 duplicates, want 3", c.reads-reads)
	}
	// Once every forgotten claim has expired, the memo vouches again.
	c.reads = 0
	if ok, _ := c.claim("later", "q", now.Add(claimTTL+time.Second)); !ok || c.reads != 0 {
		t.Fatalf("after the window: claimed %v after %d reads, want claimed without one", ok, c.reads)
	}
}

// TestStoreCreateWithClaimsItsReqID: CreateNotificationWith claims the req_id for the record it
// writes, read as ClaimReqID reads it. A second call within the window gets the first claim and
// writes nothing (its record does not exist, its rows are not added); past the window the req_id
// is claimed again. A record without an objectId is refused.
func TestStoreCreateWithClaimsItsReqID(t *testing.T) {
	ctx := context.Background()
	s, _ := openCrashable(t)
	c := newClaimer(t, s)
	added := 0
	also := func(*pebble.Batch) { added++ }

	first := testRecord("first")
	first.ReqID = "r1"
	prev, ok, err := s.CreateNotificationWith(ctx, first, claimTTL, also)
	if err != nil || !ok || prev.ObjectID != "first" || !prev.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("first call: %+v, %v, %v; want claimed for first", prev, ok, err)
	}
	if c.reads != 0 || added != 1 {
		t.Errorf("a new req_id: %d reads of Pebble, rows added %d times; want none, once", c.reads, added)
	}
	dup := testRecord("dup")
	dup.ReqID, dup.CreatedAt = "r1", first.CreatedAt.Add(time.Minute)
	prev, ok, err = s.CreateNotificationWith(ctx, dup, claimTTL, also)
	if err != nil || ok || prev.ObjectID != "first" || added != 1 {
		t.Fatalf("a duplicate within the window: %+v, %v, %v, rows added %d times; want refused, held by first, not added", prev, ok, err, added)
	}
	if _, err := s.GetNotification(ctx, "app", "dup"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused call's record: %v, want none", err)
	}
	if held, ok, err := s.ClaimReqIDNoSync(ctx, "app", "r1", store.ReqClaim{ObjectID: "other", CreatedAt: first.CreatedAt.Add(time.Minute)}, claimTTL); err != nil || ok || held.ObjectID != "first" {
		t.Fatalf("ClaimReqIDNoSync after it: claimed %v, held by %q, %v; want refused, first", ok, held.ObjectID, err)
	}
	later := testRecord("later")
	later.ReqID, later.CreatedAt = "r1", first.CreatedAt.Add(claimTTL+time.Second)
	if prev, ok, err := s.CreateNotificationWith(ctx, later, claimTTL, nil); err != nil || !ok || prev.ObjectID != "later" {
		t.Fatalf("past the window: %+v, %v, %v; want claimed for later", prev, ok, err)
	}
	if _, _, err := s.CreateNotificationWith(ctx, testRecord(""), claimTTL, also); err == nil || added != 1 {
		t.Errorf("a record without objectId: %v, rows added %d times; want refused, not added", err, added)
	}
}

// TestStorePushWrittenWholeWithItsJob: CreateNotificationWith, given queue/embedded's Prepared
// (internal/jointaccept's joint write), commits the record, its claim and its job at once and
// synced: after a power cut right after it returns all three are there. A call whose req_id is
// claimed writes none of them, and the log's readers go on past the offset it had reserved.
func TestStorePushWrittenWholeWithItsJob(t *testing.T) {
	ctx := context.Background()
	s, lg, mem := openCrashableWithLog(t)
	joint := func(n push.Notification, job string) (store.ReqClaim, bool, error) {
		p, err := lg.Prepare(queue.TopicJobs, queue.Record{Partition: 0, Key: []byte("app"), Value: []byte(job)})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Done()
		return s.CreateNotificationWith(ctx, n, claimTTL, func(b *pebble.Batch) { p.Write(b) })
	}
	whole := testRecord("whole")
	whole.ReqID = "r1"
	if _, ok, err := joint(whole, "job-whole"); err != nil || !ok {
		t.Fatalf("joint write: %v, %v", ok, err)
	}
	dup := testRecord("dup")
	dup.ReqID = "r1"
	if prev, ok, err := joint(dup, "job-dup"); err != nil || ok || prev.ObjectID != "whole" {
		t.Fatalf("a duplicate: %+v, %v, %v; want refused, held by whole", prev, ok, err)
	}
	plain := testRecord("plain") // no req_id: no claim, always written
	if _, ok, err := joint(plain, "job-plain"); err != nil || !ok {
		t.Fatalf("joint write without req_id: %v, %v", ok, err)
	}

	after := crashReopen(t, mem)
	for _, oid := range []string{"whole", "plain"} {
		if _, err := after.GetNotification(ctx, "app", oid); err != nil {
			t.Errorf("record %s after the crash: %v", oid, err)
		}
	}
	if _, err := after.GetNotification(ctx, "app", "dup"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused call's record after the crash: %v, want none", err)
	}
	if prev, ok, err := after.ClaimReqIDNoSync(ctx, "app", "r1", store.ReqClaim{ObjectID: "x", CreatedAt: whole.CreatedAt}, claimTTL); err != nil || ok || prev.ObjectID != "whole" {
		t.Errorf("the claim after the crash: %+v, %v, %v; want held by whole", prev, ok, err)
	}
	lg2, err := embedded.Open(after.DB(), embedded.Options{TrimInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lg2.Close()
	queuetest.ExpectValues(t, lg2, queue.TopicJobs, "g", "job-whole", "job-plain") // the refused call's offset skipped
}
