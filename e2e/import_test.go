package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/pushd/pushd/loadtest/scansim"
)

// importRows is the size of the import runs: small for make test; PUSHD_E2E_IMPORT_ROWS=1000000
// gives the million-row runs of issue 21 (their rates are printed with -v).
func importRows(t *testing.T, def int) int {
	if v := os.Getenv("PUSHD_E2E_IMPORT_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("PUSHD_E2E_IMPORT_ROWS=%q: want a number of at least 1000", v)
		}
		return n
	}
	return def
}

// runPushd runs the pushd binary to its end with env added, and returns its output and
// whether SIGKILL ended it.
func runPushd(t *testing.T, env []string, args ...string) (out string, killed bool, err error) {
	t.Helper()
	cmd := exec.Command(bin(t, "pushd"), args...)
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	return buf.String(), killed, err
}

func createImportApp(t *testing.T, data string) appKeysJSON {
	t.Helper()
	out, _, err := runPushd(t, nil, "app", "create", "--data", data, "--name", "moved", "--json")
	if err != nil {
		t.Fatalf("app create: %v\n%s", err, out)
	}
	var k appKeysJSON
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &k); err != nil {
		t.Fatalf("app create printed %q: %v", out, err)
	}
	return k
}

type appKeysJSON struct {
	AppID     string `json:"appId"`
	MasterKey string `json:"masterKey"`
}

// checkExported exports the app and checks that it holds exactly the valid rows of cfg, each
// as the original served it; it returns the export's bytes.
func checkExported(t *testing.T, data, appID string, cfg *scansim.Config) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if out, _, err := runPushd(t, nil, "export", "--data", data, "--app", appID, "--out", file); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		got[m["objectId"].(string)] = m
	}
	valid, bad := 0, 0
	for i := 0; i < cfg.Rows; i++ {
		oid := scansim.ObjectID(i)
		if !cfg.Valid(i) {
			if _, ok := got[oid]; ok {
				bad++
			}
			continue
		}
		valid++
		g, ok := got[oid]
		if !ok {
			bad++
			continue
		}
		want := scansim.RowAt(cfg, i, time.Time{}, false)
		for _, f := range []string{"createdAt", "updatedAt", "deviceType", "appVersion"} {
			if g[f] != want[f] {
				t.Fatalf("row %d: %s is %v, want %v", i, f, g[f], want[f])
			}
		}
		gb, _ := json.Marshal([]any{g["owner"], g["lastSeen"], g["ACL"]})
		wb, _ := json.Marshal([]any{want["owner"], want["lastSeen"], want["ACL"]})
		if !bytes.Equal(gb, wb) {
			t.Fatalf("row %d: pointer, Date, ACL %s, want %s", i, gb, wb)
		}
	}
	if bad > 0 || len(got) != valid {
		t.Fatalf("%d installations stored, want exactly the %d valid rows (%d missing or invalid ones stored)", len(got), valid, bad)
	}
	return b
}

// A live pull from the scan simulator (429s, a cut reply) killed by SIGKILL after its first
// durable write, before it saved the next cursor, resumes when run again and ends with exactly
// the valid rows stored, each keeping objectId, dates and custom fields.
func TestE2EImportPullKilledAndRerun(t *testing.T) {
	n := importRows(t, 20_000)
	data := t.TempDir()
	k := createImportApp(t, data)
	cfg := scansim.Config{AppID: k.AppID, MasterKey: "origMasterKey-0123456789", Rows: n, BadEvery: 100, Throttle: 25, CutAt: []int{3}}
	sim, err := scansim.Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	env := []string{"PUSHD_IMPORT_MASTER_KEY=" + cfg.MasterKey}
	args := []string{"import", "--data", data, "--app", k.AppID, "--from", sim.URL()}
	// The pull writes a batch each 8,192 valid rows and saves a batch's cursor once the next
	// batch is written: kill after the write halfway through (at least the second, so that a
	// cursor was saved), before the cursor that follows it is saved.
	at := max(2, n*99/100/8192/2)
	begin := time.Now()
	out, killed, _ := runPushd(t, append(env, "PUSHD_FAULTPOINT=import/after-write@"+strconv.Itoa(at)), args...)
	if !killed || !strings.Contains(out, "faultpoint import/after-write reached") {
		t.Fatalf("the first pull was not killed at its faultpoint:\n%s", out)
	}
	first := time.Since(begin)
	var st struct{ Rows int }
	b, err := os.ReadFile(filepath.Join(data, "import-"+k.AppID+".pull.json"))
	if err != nil || json.Unmarshal(b, &st) != nil || st.Rows == 0 || st.Rows >= n {
		t.Fatalf("after the kill: state %s (%v), want a cursor mid-walk", b, err)
	}
	begin = time.Now()
	out, _, err = runPushd(t, env, args...)
	if err != nil || !strings.Contains(out, fmt.Sprintf("resuming the pull after %d rows", st.Rows)) {
		t.Fatalf("the rerun: %v\n%s", err, out)
	}
	second := time.Since(begin)
	t.Logf("pull of %d rows: killed after %s, rerun from row %d took %s (%.0f rows/s over both runs); simulator %+v",
		n, first.Round(time.Millisecond), st.Rows, second.Round(time.Millisecond), float64(n+st.Rows)/(first+second).Seconds(), sim.Stats())
	checkExported(t, data, k.AppID, &cfg)
	if _, err := os.Stat(filepath.Join(data, "import-"+k.AppID+".pull.json")); !os.IsNotExist(err) {
		t.Errorf("the pull's state file is left after success: %v", err)
	}
}

// A file import (JSON lines, and a mongodump .bson written with the BSON library) killed by
// SIGKILL after its first durable batch, then run again, ends with exactly the valid rows; a
// third run changes nothing.
func TestE2EImportFileKilledAndRerun(t *testing.T) {
	n := importRows(t, 40_000)
	for _, format := range []string{"jsonl", "bson"} {
		t.Run(format, func(t *testing.T) {
			data := t.TempDir()
			k := createImportApp(t, data)
			cfg := scansim.Config{Rows: n, BadEvery: 100}
			file := filepath.Join(t.TempDir(), "_Installation."+format)
			writeExport(t, file, &cfg, format)
			args := []string{"import", "--data", data, "--app", k.AppID, file}
			at := max(1, n/16384/2) // a batch each 16,384 valid rows: kill halfway
			begin := time.Now()
			out, killed, _ := runPushd(t, []string{"PUSHD_FAULTPOINT=import/after-write@" + strconv.Itoa(at)}, args...)
			if !killed {
				t.Fatalf("the first import was not killed at its faultpoint:\n%s", out)
			}
			first := time.Since(begin)
			begin = time.Now()
			out, _, err := runPushd(t, nil, args...)
			if err != nil || !strings.Contains(out, fmt.Sprintf("refused %d", n/100)) {
				t.Fatalf("the rerun: %v\n%s", err, out)
			}
			second := time.Since(begin)
			t.Logf("%s import of %d rows (1%% bad): killed after %s; the full rerun took %s (%.0f rows/s)",
				format, n, first.Round(time.Millisecond), second.Round(time.Millisecond), float64(n)/second.Seconds())
			before := checkExported(t, data, k.AppID, &cfg)
			if out, _, err := runPushd(t, nil, args...); err != nil {
				t.Fatalf("third run: %v\n%s", err, out)
			}
			if after := checkExported(t, data, k.AppID, &cfg); !bytes.Equal(before, after) {
				t.Fatal("a third run of the same import changed the store")
			}
		})
	}
}

// writeExport writes rows 0..n-1 of cfg as JSON lines or as BSON documents back to back (a
// mongodump collection file: ObjectId _id, Date createdAt/updatedAt and lastSeen).
func writeExport(t *testing.T, path string, cfg *scansim.Config, format string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	for i := 0; i < cfg.Rows; i++ {
		row := scansim.RowAt(cfg, i, time.Time{}, false)
		if format == "jsonl" {
			if err := enc.Encode(row); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := bson.Marshal(bsonRow(t, row))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(b)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func bsonRow(t *testing.T, row map[string]any) bson.D {
	date := func(s string) bson.DateTime {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return bson.NewDateTimeFromTime(tm)
	}
	d := bson.D{}
	for k, v := range row {
		switch k {
		case "objectId":
			id, err := bson.ObjectIDFromHex(v.(string))
			if err != nil {
				t.Fatal(err)
			}
			d = append(d, bson.E{Key: "_id", Value: id})
		case "createdAt", "updatedAt":
			d = append(d, bson.E{Key: k, Value: date(v.(string))})
		case "lastSeen":
			d = append(d, bson.E{Key: k, Value: date(v.(map[string]any)["iso"].(string))})
		default:
			d = append(d, bson.E{Key: k, Value: v})
		}
	}
	return d
}
