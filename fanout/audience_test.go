package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// seedHybrid adds n hybrid Android installations beside the standard test population: FCM,
// HMS (stored as the original service stores it, "HMS") and Honor in turn, subscribed to
// "news" when i is even, with custom field age = i.
func (e *env) seedHybrid(buckets, n int) {
	e.t.Helper()
	now := time.Now()
	vendors := []string{"fcm", "HMS", "honor"}
	insts := make([]push.Installation, 0, n)
	for i := range n {
		r := push.Route{
			ObjectID: fmt.Sprintf("h%07d", i), DeviceType: push.DeviceAndroid,
			InstallationID: fmt.Sprintf("hid-%d", i), RegistrationID: fmt.Sprintf("hreg-%d", i),
			Vendor: vendors[i%len(vendors)], UpdatedAt: now.UnixMilli(),
		}
		if i%2 == 0 {
			r.Channels = []string{"news"}
		}
		doc := map[string]any{
			"objectId": r.ObjectID, "deviceType": r.DeviceType, "installationId": r.InstallationID,
			"registrationId": r.RegistrationID, "vendor": r.Vendor, "age": i,
			"createdAt": now.UTC().Format(push.TimeLayout), "updatedAt": now.UTC().Format(push.TimeLayout),
		}
		if r.Channels != nil {
			doc["channels"] = r.Channels
		}
		b, err := json.Marshal(doc)
		if err != nil {
			e.t.Fatal(err)
		}
		insts = append(insts, push.Installation{Route: r, CreatedAt: now.UnixMilli(), Doc: b})
	}
	if err := e.st.SeedInstallations(testApp, buckets, insts); err != nil {
		e.t.Fatal(err)
	}
}

func targetsOf(c push.Counts) map[string]int64 {
	out := map[string]int64{}
	for ch, t := range c {
		if t.Targets > 0 {
			out[ch] = t.Targets
		}
	}
	return out
}

func sameTargets(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAudienceCountsWhatAPushReaches: for a mixed audience (iOS, the own channel, mi, FCM, HMS,
// Honor; invalid and inactive installations among them), the dry run of every kind of where
// (every bucket, a channel's index, point ids, a sub-query) and of devices pushes (with a
// listed id known dead) counts, per channel, exactly the targets the real push then reaches.
func TestAudienceCountsWhatAPushReaches(t *testing.T) {
	const buckets = 32
	e := newEnv(t)
	e.createApp(buckets, nil)
	e.seed(buckets, 2000)
	e.seedHybrid(buckets, 60)
	ctx := context.Background()
	if err := e.st.MarkDeadToken(ctx, testApp, "hreg-dead", time.Now()); err != nil {
		t.Fatal(err)
	}
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 2)
	aud, err := NewAudience(DefaultPlannerConfig(), e.st)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []push.Job{
		{Where: json.RawMessage(`{}`)},
		{Where: json.RawMessage(`{"channels":{"$in":["news"]}}`)},
		{Where: json.RawMessage(`{"deviceType":"android","age":{"$lt":30}}`)},
		{Where: json.RawMessage(`{"$or":[{"channels":"sports"},{"vendor":{"$in":["mi","HMS"]}}]}`)},
		{Where: json.RawMessage(`{"objectId":{"$in":["o0000002","o0000097","h0000001","h0000002","nope"]}}`)},
		{Where: json.RawMessage(`{"registrationId":{"$in":["hreg-0","hreg-4","reg-1","reg-x"]}}`)},
		{Where: json.RawMessage(`{"objectId":{"$select":{"query":{"className":"_Installation","where":{"vendor":"fcm"}},"key":"objectId"}}}`)},
		{Kind: push.JobDevices, DeviceType: push.DeviceIOS, DeviceIDs: []string{fmt.Sprintf("%064x", 0), "ffff"}},
		{Kind: push.JobDevices, DeviceType: push.DeviceAndroid, Vendor: push.ChannelFCM, DeviceIDs: []string{"hreg-0", "hreg-3", "hreg-dead", "hreg-new"}},
		{Kind: push.JobDevices, DeviceType: push.DeviceAndroid, DeviceIDs: []string{"iid-3", "iid-5", "iid-unknown"}},
	}
	channels := map[string]bool{}
	for i, job := range jobs {
		t.Run(fmt.Sprintf("%d:%s%v", i, job.Where, job.DeviceIDs), func(t *testing.T) {
			if job.Kind == "" {
				job.Kind = push.JobQuery
			}
			dry := job
			dry.ID, dry.AppID, dry.CreatedAt = "dry", testApp, time.Now()
			got, err := aud.Count(ctx, &dry)
			if err != nil {
				t.Fatal(err)
			}
			real := e.submit(job)
			rec := e.waitDone(real.NotificationObjectID)
			if want := targetsOf(rec.Counts); !sameTargets(targetsOf(got.Channels), want) || len(want) == 0 {
				t.Fatalf("dry run counts %v, the push reached %v", targetsOf(got.Channels), want)
			}
			for ch, c := range got.Channels {
				channels[ch] = true
				if c.InvalidTokens != rec.Counts[ch].InvalidTokens {
					t.Errorf("%s: dry run says %d known-dead ids, the push counted %d invalid tokens", ch, c.InvalidTokens, rec.Counts[ch].InvalidTokens)
				}
			}
			if got.Rows == 0 {
				t.Errorf("dry run read no rows")
			}
		})
	}
	for _, ch := range []string{push.ChannelAPNs, push.ChannelDirect, push.ChannelMi, push.ChannelFCM, push.ChannelHMS, push.ChannelHonor} {
		if !channels[ch] {
			t.Errorf("no dry run counted a %s target: the audience is not mixed enough", ch)
		}
	}
}

// TestAudienceEndsWithItsContext: a count whose ctx ends stops with ctx's error (the API's
// bound on a dry run's cost), and a where the fan-out cannot run is the client's error.
func TestAudienceEndsWithItsContext(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, 500)
	aud, err := NewAudience(DefaultPlannerConfig(), e.st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	job := push.Job{ID: "dry", AppID: testApp, Kind: push.JobQuery, Where: json.RawMessage(`{}`), CreatedAt: time.Now()}
	if _, err := aud.Count(ctx, &job); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled count: got %v, want context.Canceled", err)
	}
	job.AppID = "nope"
	var perr *push.Error
	if _, err := aud.Count(context.Background(), &job); !errors.As(err, &perr) || perr.Code != push.CodeObjectNotFound {
		t.Errorf("unknown app: got %v, want code %d", err, push.CodeObjectNotFound)
	}
}
