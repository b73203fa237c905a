package fanout

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestPlannerTaskWire: a task encoded with its job encoded once (encodeTask) is byte for byte
// json.Marshal of the task, for a task with every field set, and taskWire has push.Task's
// fields under the same JSON names, so a field added to push.Task fails here until the planner
// carries it.
func TestPlannerTaskWire(t *testing.T) {
	task := push.Task{
		ID: "job1-r0-8",
		Job: push.Job{
			ID: "job1", AppID: "app1", NotificationObjectID: "obj1", NotificationID: "nid1",
			Kind:  push.JobQuery,
			Where: json.RawMessage(`{ "channels" : "a<b>&c" }`), DeviceType: "ios",
			DeviceIDs: []string{"d1", "d2"}, Vendor: "mi", DeviceProfile: "p",
			Data: json.RawMessage(`{"alert": "<b>sale</b> & more", "n": 1.50}`), Prod: "dev",
			Topic: "com.example", APNsTeamID: "T1", NotificationChannel: "ch",
			ExpiresAt: time.Date(2026, 11, 23, 1, 2, 3, 4000000, time.UTC), FlowControl: 1500, ChannelPolicy: "own_first", MessageClass: "marketing",
			CreatedAt: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC),
			QueryAt:   time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC),
		},
		Source: push.SourceChannel, Channel: "news\u2028<x>", BucketLo: 8, BucketHi: 16,
		IDKind: push.KindToken, IDs: []string{"t1", "t\"2"}, Rate: 93.75, Of: 32,
	}
	for _, v := range []reflect.Value{reflect.ValueOf(task), reflect.ValueOf(task.Job)} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is zero: set every field so the comparison covers it", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	want, err := json.Marshal(&task)
	if err != nil {
		t.Fatal(err)
	}
	jobJSON, err := json.Marshal(&task.Job)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeTask(&task, jobJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeTask:\n%s\njson.Marshal:\n%s", got, want)
	}
	var back push.Task
	if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back.IDs, task.IDs) || back.Job.ID != task.Job.ID {
		t.Fatalf("decode: %v %+v", err, back)
	}

	tt, wt := reflect.TypeFor[push.Task](), reflect.TypeFor[taskWire]()
	if tt.NumField() != wt.NumField() {
		t.Fatalf("push.Task has %d fields, taskWire %d", tt.NumField(), wt.NumField())
	}
	for i := range tt.NumField() {
		a, b := tt.Field(i), wt.Field(i)
		if a.Name != b.Name || a.Tag != b.Tag {
			t.Errorf("field %d: push.Task %s %q, taskWire %s %q", i, a.Name, a.Tag, b.Name, b.Tag)
		}
	}
}

func BenchmarkPlannerEncodeTasks(b *testing.B) {
	job := push.Job{ID: "job1", AppID: "app1", NotificationObjectID: "obj1", NotificationID: "nid1",
		Kind: push.JobQuery, Where: json.RawMessage(`{"channels":"deals"}`),
		Data: json.RawMessage(`{"alert":"Sale starts now","title":"Shop","badge":1}`), Prod: "prod",
		CreatedAt: time.Now()}
	tasks := make([]push.Task, 32)
	for i := range tasks {
		tasks[i] = push.Task{ID: rangeTaskID(job.ID, i*8, i*8+8), Job: job, Source: push.SourceChannel,
			Channel: "deals", BucketLo: i * 8, BucketHi: i*8 + 8, Of: 32}
	}
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			for i := range tasks {
				if _, err := json.Marshal(&tasks[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		for b.Loop() {
			jobJSON, err := json.Marshal(&job)
			if err != nil {
				b.Fatal(err)
			}
			for i := range tasks {
				if _, err := encodeTask(&tasks[i], jobJSON); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
