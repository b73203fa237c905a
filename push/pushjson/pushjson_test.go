package pushjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// gen builds values from a fuzz input's seed: strings, times and raw members chosen to cross
// every branch of the encoders and of the decoder's fast path and its fallback.
type gen struct{ r *rand.Rand }

var genStrings = []string{"", "a", "6571a2b3c4d5e6f708192a3b", "in-queue", "中文通知", "é", "a<b", "x&y", `q"uote`,
	"back\\slash", "tab\there", "nl\n", "\x01", "\u2028", "\xff", "ok-id_123", "prod", "dev"}

var genRaws = []json.RawMessage{nil, {}, json.RawMessage("null"), json.RawMessage(`{"alert":"hi"}`),
	json.RawMessage(`{"alert":"Sale: 20% off","badge":"Increment","n":[1,2.5,-3e2,true,false,null]}`),
	json.RawMessage(`{ "alert" : "spaced" }`), json.RawMessage(`{"alert":"<b>"}`), json.RawMessage(`{"a":"\u2028"}`),
	json.RawMessage("{\"a\":\"\u2028\"}"), json.RawMessage(`{"a":"\ud800"}`), json.RawMessage(`{"a":1`),
	json.RawMessage(`{"deviceType":"ios","channels":{"$in":["a","b"]}}`), json.RawMessage(`"\xff"`),
	json.RawMessage(`[]`), json.RawMessage(`{"a":"\/\b\f\n\r\t\\\""}`), json.RawMessage(`01`),
	json.RawMessage(`{"alert":"spaces in a string, “quoted”","a\"b":"x\\"}`), json.RawMessage(`{"a":"x"} `),
	json.RawMessage("{\"a\":\"\u2029\"}"), json.RawMessage(`{"a":["x", "y"]}`), json.RawMessage(`{"a":"\">"}`)}

func (g gen) str() string { return genStrings[g.r.IntN(len(genStrings))] }

func (g gen) raw() json.RawMessage {
	r := genRaws[g.r.IntN(len(genRaws))]
	if r == nil {
		return nil
	}
	return append(json.RawMessage{}, r...)
}

func (g gen) strs() []string {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, g.r.IntN(4)+1)
	for i := range out {
		out[i] = g.str()
	}
	return out
}

func (g gen) time() time.Time {
	base := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC).Add(time.Duration(g.r.Int64N(1 << 50)))
	switch g.r.IntN(8) {
	case 0:
		return time.Time{}
	case 1:
		return base.In(time.FixedZone("", 8*3600))
	case 2:
		return base.In(time.FixedZone("", -3*3600-1800))
	case 3:
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	case 4:
		return base.In(time.FixedZone("", 3600+7)) // seconds in the offset
	case 5:
		return base.Truncate(time.Millisecond)
	}
	return base
}

func (g gen) int() int {
	switch g.r.IntN(3) {
	case 0:
		return 0
	case 1:
		return -g.r.IntN(1000)
	}
	return g.r.IntN(1 << 40)
}

func (g gen) job() *push.Job {
	return &push.Job{ID: g.str(), AppID: g.str(), NotificationObjectID: g.str(), NotificationID: g.str(),
		Kind: push.JobKind(g.str()), Where: g.raw(), DeviceType: g.str(), DeviceIDs: g.strs(), Vendor: g.str(),
		DeviceProfile: g.str(), Data: g.raw(), Prod: g.str(), Topic: g.str(), APNsTeamID: g.str(),
		NotificationChannel: g.str(), ExpiresAt: g.time(), FlowControl: g.int(), ChannelPolicy: g.str(),
		MessageClass: g.str(), CreatedAt: g.time(), QueryAt: g.time()}
}

func (g gen) counts() push.Counts {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return push.Counts{}
	}
	c := push.Counts{}
	for range g.r.IntN(4) + 1 {
		t := push.Tally{Targets: int64(g.int()), Sent: int64(g.int()), Failed: int64(g.int()), Expired: int64(g.int()),
			Deferred: int64(g.int()), InvalidTokens: int64(g.int()), Arrivals: int64(g.int())}
		if g.r.IntN(2) == 0 {
			t.FailedBy = map[string]int64{}
			for range g.r.IntN(3) {
				t.FailedBy[g.str()] = int64(g.int())
			}
		}
		c[g.str()] = t
	}
	return c
}

func (g gen) notification() *push.Notification {
	n := &push.Notification{ObjectID: g.str(), AppID: g.str(), NotificationID: g.str(), JobID: g.str(),
		Status: g.str(), CreatedAt: g.time(), UpdatedAt: g.time(), Kind: push.JobKind(g.str()), Data: g.raw(),
		Where: g.raw(), Channels: g.strs(), DeviceType: g.str(), DeviceCount: g.int(), Prod: g.str(),
		PushTime: g.time(), ExpiresAt: g.time(), ExpirationInterval: int64(g.int()), FlowControl: g.int(),
		ReqID: g.str(), ChannelPolicy: g.str(), MessageClass: g.str(), ScheduledID: int64(g.int()),
		Tasks: g.int(), TasksDone: g.int(), Counts: g.counts(), Errors: g.strs(), Stopped: g.str(),
		TasksFinished: g.strs(), PendingBy: g.str()}
	if g.r.IntN(2) == 0 {
		n.PendingJob = g.job()
	}
	return n
}

// checkEncode holds an encoder to json.Marshal.
func checkEncode[T any](t *testing.T, v *T, enc func([]byte, *T) ([]byte, error)) []byte {
	t.Helper()
	want, werr := json.Marshal(v)
	prefix := []byte("prefix")
	got, gerr := enc(prefix, v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("encoding %+v: error %v, encoding/json's %v", v, gerr, werr)
	}
	if werr != nil {
		if !bytes.Equal(got, prefix) {
			t.Fatalf("a failed encoding changed dst: %q", got)
		}
		return nil
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("encoding differs:\n got %s\nwant %s", got, want)
	}
	return want
}

// checkDecode holds a decoder to json.Unmarshal into a zero value, starting from a dirty one.
func checkDecode[T any](t *testing.T, data []byte, dirty T, dec func([]byte, *T) error) {
	t.Helper()
	var want T
	werr := json.Unmarshal(data, &want)
	got := dirty
	gerr := dec(data, &got)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("decoding %q: error %v, encoding/json's %v", data, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoding %q:\n got %+v\nwant %+v", data, got, want)
	}
}

func TestNotificationAgainstEncodingJSON(t *testing.T) {
	for seed := range uint64(3000) {
		g := gen{rand.New(rand.NewPCG(seed, 1))}
		n := g.notification()
		if data := checkEncode(t, n, AppendNotification); data != nil {
			checkDecode(t, data, *g.notification(), DecodeNotification)
		}
		j := g.job()
		if data := checkEncode(t, j, AppendJob); data != nil {
			checkDecode(t, data, *g.job(), DecodeJob)
		}
	}
}

// The shape the encoders write is decoded on the fast path; what they never write is left to
// encoding/json and still decoded the same.
func TestDecodeFastPathAndFallback(t *testing.T) {
	n := &push.Notification{ObjectID: "o1", AppID: "a", NotificationID: "n", Status: "in-queue",
		CreatedAt: time.Date(2026, 11, 25, 1, 2, 3, 4000000, time.UTC), Kind: push.JobQuery,
		Data: json.RawMessage(`{"alert":"hi"}`), Where: json.RawMessage(`{"deviceType":"ios"}`), Prod: "prod",
		Counts:     push.Counts{"apns": {Targets: 3, Sent: 2, Failed: 1, FailedBy: map[string]int64{"gateway": 1}}},
		PendingJob: &push.Job{ID: "o1", AppID: "a", Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`)}}
	data, err := AppendNotification(nil, n)
	if err != nil {
		t.Fatal(err)
	}
	var d decoder
	d.b = data
	var fast push.Notification
	if !d.notification(&fast) || !d.end() {
		t.Fatalf("the encoders' shape left the fast path: %s", data)
	}
	checkDecode(t, data, push.Notification{}, DecodeNotification)
	if a := testing.AllocsPerRun(10, func() { data, _ = AppendNotification(data[:0], n) }); a != 0 {
		t.Fatalf("the encoders' shape was written with %v allocations: encoding/json's path", a)
	}
	for _, in := range []string{
		` {"objectId":"o1"}`, `{"objectId":"o1","objectId":"o2"}`, `{"ObjectId":"o1"}`, `{"objectId":"o\u00e91"}`,
		`{"tasks":1.0}`, `{"tasks":"1"}`, `{"tasks":1e2}`, `{"pendingJob":null}`, `{"counts":null}`, `{"channels":null}`,
		`{"data":null}`, `{"unknown":{"deep":[1,2]},"status":"done"}`, `{"createdAt":"2026-11-25T01:02:03+08:00"}`,
		`{"createdAt":"bad"}`, `{"status":"done"}x`, `{"counts":{"apns":{"sent":1},"apns":{"failed":2}}}`,
		`{"where":{"a":"\ud800"}}`, `{"tasks":99999999999999999999}`, `{"tasks":-0}`, `{"tasks":01}`, ``, `null`,
		"{\"objectId\":\"\xff\"}", "{\"status\":\"a\xe4\xb8\"}", `{"status":"a","status":"b","data":1,"data":{}}`,
		`{"pendingJob":{"id":"a"},"pendingJob":{"appId":"b"}}`, `{"counts":{"apns":{"sent":1}},"counts":{"fcm":{"sent":2}}}`,
		`{"counts":{"apns":{"failedBy":{"x":1},"failedBy":{"y":2}}}}`, `{"counts":{"apns":{"failedBy":{"x":1,"x":2}}}}`,
	} {
		checkDecode(t, []byte(in), *n, DecodeNotification)
	}
}

func FuzzNotificationJSON(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		g := gen{rand.New(rand.NewPCG(a, b))}
		if data := checkEncode(t, g.notification(), AppendNotification); data != nil {
			checkDecode(t, data, *g.notification(), DecodeNotification)
		}
		if data := checkEncode(t, g.job(), AppendJob); data != nil {
			checkDecode(t, data, *g.job(), DecodeJob)
		}
	})
}

// FuzzDecodeNotification holds the decoders to json.Unmarshal, and the raw members' encoding to
// json.Marshal, on any bytes.
func FuzzDecodeNotification(f *testing.F) {
	for seed := range uint64(20) {
		g := gen{rand.New(rand.NewPCG(seed, 7))}
		if data, err := json.Marshal(g.notification()); err == nil {
			f.Add(data)
		}
		if data, err := json.Marshal(g.job()); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data, push.Notification{Status: "dirty", PendingJob: &push.Job{ID: "x"}}, DecodeNotification)
		checkDecode(t, data, push.Job{ID: "dirty", DeviceIDs: []string{"x"}}, DecodeJob)
		// Any bytes as a raw member: written as encoding/json writes them, or refused as it refuses.
		checkEncode(t, &push.Job{Data: data, Where: data}, AppendJob)
	})
}

// sampleRecord is a record as intake writes it: in the queue, with its pending job.
func sampleRecord() *push.Notification {
	now := time.Date(2026, 11, 25, 10, 30, 0, 123000000, time.UTC)
	j := &push.Job{ID: "6571a2b3c4d5e6f708192a3b", AppID: "app-abcdefgh", NotificationObjectID: "6571a2b3c4d5e6f708192a3b",
		NotificationID: "n8Xq2LmP", Kind: push.JobQuery, Where: json.RawMessage(`{"deviceType":"ios","appVersion":"intake-none-3"}`),
		Data: json.RawMessage(`{"alert":"Sale starts now: 20% off everything","title":"Shop","badge":"Increment","sound":"default"}`),
		Prod: "prod", ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	return &push.Notification{ObjectID: j.ID, AppID: j.AppID, NotificationID: j.NotificationID, Status: "in-queue",
		CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: j.Data, Where: j.Where, Prod: "prod",
		ExpiresAt: j.ExpiresAt, ExpirationInterval: 3600, ReqID: "runabc123", PendingJob: j, PendingBy: "api-123456"}
}

// BenchmarkRecordJSON compares the record's encoding and decoding with encoding/json's.
func BenchmarkRecordJSON(b *testing.B) {
	n := sampleRecord()
	data, _ := json.Marshal(n)
	b.Run("encode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(n)
		}
	})
	b.Run("encode/pushjson", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendNotification(buf[:0], n)
		}
	})
	b.Run("decode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m push.Notification
			_ = json.Unmarshal(data, &m)
		}
	})
	b.Run("decode/pushjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m push.Notification
			_ = DecodeNotification(data, &m)
		}
	})
}
