package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/pushd/pushd/loadtest/scansim"
)

// exportRows renders the simulator's rows 0..n-1 in a file format.
func exportRows(t *testing.T, cfg *scansim.Config, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	rows := make([]any, cfg.Rows)
	for i := range rows {
		rows[i] = scansim.RowAt(cfg, i, time.Time{}, false)
	}
	switch f {
	case FormatLines:
		enc := json.NewEncoder(&buf)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
	case FormatResults:
		b, _ := json.MarshalIndent(map[string]any{"results": rows}, "", "  ")
		buf.Write(b)
	case FormatArray:
		b, _ := json.Marshal(rows)
		buf.Write(b)
	}
	return buf.Bytes()
}

// TestMigrateFileFormats: the JSON-lines, {"results":[...]} and array exports load the valid
// rows exactly, the format found from the content, with one refusal per bad row.
func TestMigrateFileFormats(t *testing.T) {
	cfg := scansim.Config{Rows: 2000, BadEvery: 100}
	for _, f := range []Format{FormatLines, FormatResults, FormatArray} {
		t.Run(string(f), func(t *testing.T) {
			st, app := openApp(t)
			l := NewLoader(st, app)
			if err := ReadFile(context.Background(), l, bytes.NewReader(exportRows(t, &cfg, f)), "export.json", FormatAuto, nil); err != nil {
				t.Fatal(err)
			}
			checkRows(t, stored(t, st, app), &cfg, func(i int) map[string]any { return scansim.RowAt(&cfg, i, time.Time{}, false) })
			rep := l.Report()
			if rep.Refused != 20 || len(rep.Refusals) != 20 || rep.Refusals[0].Row != 100 || rep.Reasons["114 invalid iOS deviceToken"] != 20 {
				t.Errorf("report %+v: want 20 refusals, the first on row 100, all code 114", *rep)
			}
		})
	}
}

// TestMigrateFileRefusesLikeTheAPI: rows the API would refuse are refused with its code and
// change nothing; a row without objectId or createdAt is refused too; the rest load.
func TestMigrateFileRefusesLikeTheAPI(t *testing.T) {
	lines := strings.Join([]string{
		`{"objectId":"ok1","createdAt":"2025-01-01T00:00:00.000Z","updatedAt":"2025-01-02T00:00:00.000Z","deviceType":"android","installationId":"IID-1","custom":{"a":1}}`,
		`{"objectId":"bad1","createdAt":"2025-01-01T00:00:00.000Z","deviceType":"windows","installationId":"x"}`,
		`{"objectId":"bad2","createdAt":"2025-01-01T00:00:00.000Z","deviceType":"android","installationId":"y","channels":["no spaces"]}`,
		`{"objectId":"bad3","createdAt":"2025-01-01T00:00:00.000Z","deviceType":"android","installationId":"z","bad.key":1}`,
		`{"objectId":"bad4","createdAt":"2025-01-01T00:00:00.000Z","deviceType":"android","installationId":"w","a":1,"a":2}`,
		`{"createdAt":"2025-01-01T00:00:00.000Z","deviceType":"android","installationId":"v"}`,
		`{"objectId":"bad6","deviceType":"android","installationId":"u"}`,
		`not json`,
	}, "\n")
	st, app := openApp(t)
	l := NewLoader(st, app)
	if err := ReadFile(context.Background(), l, strings.NewReader(lines), "", FormatLines, nil); err != nil {
		t.Fatal(err)
	}
	rep := l.Report()
	wantCodes := []int{1, 112, 121, 107, 113, 113, 107}
	if rep.Stored != 1 || rep.Refused != len(wantCodes) {
		t.Fatalf("report %+v: want 1 stored, %d refused", *rep, len(wantCodes))
	}
	for i, r := range rep.Refusals {
		if r.Code != wantCodes[i] || r.Row != i+2 {
			t.Errorf("refusal %d: %+v, want row %d code %d", i, r, i+2, wantCodes[i])
		}
	}
	got := stored(t, st, app)
	ok1 := got["ok1"]
	if len(got) != 1 || ok1["installationId"] != "iid-1" || ok1["updatedAt"] != "2025-01-02T00:00:00.000Z" {
		t.Errorf("stored %v: want ok1 alone, installationId lower-cased as the API does, its updatedAt kept", got)
	}
}

// TestMigrateFileDeduplicatesAndIsIdempotent: two rows of one device keep the newest; a second
// run of the same file changes nothing.
func TestMigrateFileDeduplicatesAndIsIdempotent(t *testing.T) {
	tok := strings.Repeat("ab", 32)
	lines := strings.Join([]string{
		`{"objectId":"old","createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-01-01T00:00:00Z","deviceType":"ios","deviceToken":"` + strings.ToUpper(tok) + `"}`,
		`{"objectId":"new","createdAt":"2025-02-01T00:00:00Z","updatedAt":"2025-03-01T00:00:00Z","deviceType":"ios","deviceToken":"` + tok + `"}`,
	}, "\n")
	st, app := openApp(t)
	run := func() (map[string]map[string]any, int) {
		l := NewLoader(st, app)
		if err := ReadFile(context.Background(), l, strings.NewReader(lines), "", FormatAuto, nil); err != nil {
			t.Fatal(err)
		}
		return stored(t, st, app), l.Report().Stale
	}
	first, stale := run()
	if len(first) != 1 || first["new"] == nil || stale != 1 {
		t.Fatalf("stored %v (stale %d): want only the newest registration of the token", first, stale)
	}
	second, _ := run()
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	if !bytes.Equal(a, b) {
		t.Fatalf("a second run changed the store:\n%s\n%s", a, b)
	}
}

// TestMigrateBSONBackup: a mongodump _Installation.bson written with the BSON library loads:
// ObjectId _id, Date createdAt/updatedAt, a nested Date, int32/int64 numbers; Parse's storage
// shapes (_created_at, _p_ pointers, _acl, _rperm) take their REST form.
func TestMigrateBSONBackup(t *testing.T) {
	oid := bson.NewObjectID()
	created := time.Date(2025, 5, 1, 8, 0, 0, 123e6, time.UTC)
	docs := []bson.D{
		{{Key: "_id", Value: oid}, {Key: "createdAt", Value: bson.NewDateTimeFromTime(created)},
			{Key: "updatedAt", Value: bson.NewDateTimeFromTime(created.Add(time.Hour))},
			{Key: "deviceType", Value: "ios"}, {Key: "deviceToken", Value: strings.Repeat("0f", 32)},
			{Key: "channels", Value: bson.A{"all", "vip"}}, {Key: "badge", Value: int32(3)}, {Key: "seen", Value: int64(1) << 40},
			{Key: "lastOpen", Value: bson.NewDateTimeFromTime(created)},
			{Key: "ACL", Value: bson.D{{Key: "*", Value: bson.D{{Key: "read", Value: true}}}}}},
		// Parse's storage form.
		{{Key: "_id", Value: "pArSe12345"}, {Key: "_created_at", Value: bson.NewDateTimeFromTime(created)},
			{Key: "_updated_at", Value: bson.NewDateTimeFromTime(created)},
			{Key: "deviceType", Value: "android"}, {Key: "installationId", Value: "abc-def"},
			{Key: "_p_user", Value: "_User$u123"}, {Key: "_rperm", Value: bson.A{"*"}},
			{Key: "_acl", Value: bson.D{{Key: "*", Value: bson.D{{Key: "r", Value: true}, {Key: "w", Value: true}}}}}},
		// Refused: no createdAt.
		{{Key: "_id", Value: bson.NewObjectID()}, {Key: "deviceType", Value: "android"}, {Key: "installationId", Value: "x"}},
	}
	var file bytes.Buffer
	for _, d := range docs {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		file.Write(b)
	}
	st, app := openApp(t)
	l := NewLoader(st, app)
	if err := ReadFile(context.Background(), l, &file, "_Installation.bson", FormatAuto, nil); err != nil {
		t.Fatal(err)
	}
	if rep := l.Report(); rep.Stored != 2 || rep.Refused != 1 || rep.Refusals[0].Row != 3 {
		t.Fatalf("report %+v: want 2 stored, row 3 refused", *rep)
	}
	got := stored(t, st, app)
	ios := got[oid.Hex()]
	want := map[string]any{
		"createdAt": "2025-05-01T08:00:00.123Z", "updatedAt": "2025-05-01T09:00:00.123Z",
		"badge": float64(3), "seen": float64(int64(1) << 40),
		"lastOpen": map[string]any{"__type": "Date", "iso": "2025-05-01T08:00:00.123Z"},
		"channels": []any{"all", "vip"}, "ACL": map[string]any{"*": map[string]any{"read": true}},
	}
	for k, v := range want {
		gb, _ := json.Marshal(ios[k])
		wb, _ := json.Marshal(v)
		if !bytes.Equal(gb, wb) {
			t.Errorf("BSON row %s: %s is %s, want %s", oid.Hex(), k, gb, wb)
		}
	}
	parse := got["pArSe12345"]
	pb, _ := json.Marshal(map[string]any{"user": parse["user"], "ACL": parse["ACL"], "_rperm": parse["_rperm"]})
	if string(pb) != `{"ACL":{"*":{"read":true,"write":true}},"_rperm":null,"user":{"__type":"Pointer","className":"_User","objectId":"u123"}}` {
		t.Errorf("Parse row: %s", pb)
	}
}

// TestMigrateExportRoundTrip: an export loaded into another store exports the same bytes.
func TestMigrateExportRoundTrip(t *testing.T) {
	cfg := scansim.Config{Rows: 1000, BadEvery: 10}
	st, app := openApp(t)
	if err := ReadFile(context.Background(), NewLoader(st, app), bytes.NewReader(exportRows(t, &cfg, FormatLines)), "", FormatAuto, nil); err != nil {
		t.Fatal(err)
	}
	var first, second bytes.Buffer
	n, err := Export(context.Background(), st, app, &first, nil)
	if err != nil || n != 900 {
		t.Fatalf("Export: %d rows, %v; want 900", n, err)
	}
	st2, app2 := openApp(t)
	app2.Settings.Buckets = app.Settings.Buckets
	l := NewLoader(st2, app2)
	if err := ReadFile(context.Background(), l, bytes.NewReader(first.Bytes()), "", FormatAuto, nil); err != nil || l.Report().Stored != 900 {
		t.Fatalf("import of the export: %v, %+v", err, *l.Report())
	}
	if _, err := Export(context.Background(), st2, app2, &second, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("the export of the imported export differs from the export")
	}
}
