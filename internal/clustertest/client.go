package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// Push posts body to /1.1/push of the node's API with the app's master key and returns the
// status and, when accepted, the push record's objectId.
func (c *Cluster) Push(n *Node, body string) (status int, objectID string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, n.API+"/1.1/push", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-LC-Id", c.App.ID)
	req.Header.Set("X-LC-Key", c.App.MasterKey+",master")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST /1.1/push on node %s: %v", n.Name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 {
		var r struct {
			ObjectID string `json:"objectId"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.ObjectID == "" {
			c.t.Fatalf("POST /1.1/push on node %s: %d %s", n.Name, resp.StatusCode, b)
		}
		objectID = r.ObjectID
	}
	return resp.StatusCode, objectID
}

// WaitDone waits until the push record reaches done and returns it.
func (c *Cluster) WaitDone(objectID string, timeout time.Duration) push.Notification {
	c.t.Helper()
	var rec push.Notification
	waitfor.True(c.t, timeout, "push "+objectID+" done", func() bool {
		r, err := c.Store.GetNotification(context.Background(), c.App.ID, objectID)
		rec = r
		return err == nil && r.Status == push.StatusDone
	})
	return rec
}

// Schedule writes a scheduled push of where {} due at due, as POST /1.1/push with a
// push_time writes it (the API refuses a push_time under a minute away; the scenarios
// cannot wait that long), and returns its record's objectId and the schedule's id.
func (c *Cluster) Schedule(due time.Time) (objectID string, id int64) {
	c.t.Helper()
	ctx := context.Background()
	id, err := c.Store.NextID(ctx, "scheduled")
	if err != nil {
		c.t.Fatal(err)
	}
	now := time.Now()
	oid := fmt.Sprintf("sched%d", id)
	job := push.Job{ID: fmt.Sprintf("job-sched%d", id), AppID: c.App.ID, NotificationObjectID: oid, NotificationID: oid,
		Kind: push.JobQuery, Where: json.RawMessage(`{}`), Data: json.RawMessage(`{"alert":"scheduled"}`), Prod: "prod", CreatedAt: now}
	n := push.Notification{ObjectID: oid, AppID: c.App.ID, NotificationID: oid, JobID: job.ID, Status: push.StatusScheduled,
		CreatedAt: now, UpdatedAt: now, Kind: job.Kind, Data: job.Data, Prod: job.Prod, ScheduledID: id, PushTime: due}
	sp := push.Scheduled{ID: id, AppID: c.App.ID, DueAt: due, Job: job, CreatedAt: now}
	if err := c.Store.CreateScheduledNotification(ctx, n, sp); err != nil {
		c.t.Fatal(err)
	}
	return oid, id
}

// Metric reads one sample of the node's /metrics (exact name with labels), 0 when absent.
func (n *Node) Metric(name string) float64 {
	for _, l := range strings.Split(n.Metrics(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return 0
}

// Audience is the number of installations a scenario pushes to: small by default (make
// test), CLUSTERTEST_AUDIENCE for a larger run (100000 in the scenario).
func Audience(t testing.TB, def int) int {
	if v := os.Getenv("CLUSTERTEST_AUDIENCE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CLUSTERTEST_AUDIENCE=%q: want a positive number", v)
		}
		return n
	}
	return def
}

// Owned is how many partitions of topic the node's members of group own now (the partitions
// whose lag gauge it exports).
func (n *Node) Owned(group, topic string) int {
	prefix := fmt.Sprintf(`pushd_kafka_consumer_lag{group=%q,topic=%q,`, group, topic)
	owned := 0
	for _, l := range strings.Split(n.Metrics(), "\n") {
		if strings.HasPrefix(l, prefix) {
			owned++
		}
	}
	return owned
}
