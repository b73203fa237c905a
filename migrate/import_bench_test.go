package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/loadtest/scansim"
)

// BenchmarkMigrateImportFile loads a JSON-lines export of 100,000 installations (1% invalid)
// into a fresh embedded store: the bulk path of pushd import, validation included. rows/s is
// the figure issue 21 asks for (target: 50,000).
func BenchmarkMigrateImportFile(b *testing.B) {
	const rows = 100_000
	cfg := scansim.Config{Rows: rows, BadEvery: 100}
	file := exportRowsB(b, &cfg)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var total float64
	for b.Loop() {
		b.StopTimer()
		st, app := openApp(b)
		l := NewLoader(st, app)
		b.StartTimer()
		if err := ReadFile(context.Background(), l, bytes.NewReader(file), "", FormatLines, nil); err != nil {
			b.Fatal(err)
		}
		if l.Report().Stored != rows-rows/100 {
			b.Fatalf("report %+v", *l.Report())
		}
		total += rows
	}
	b.ReportMetric(total/b.Elapsed().Seconds(), "rows/s")
}

func exportRowsB(b *testing.B, cfg *scansim.Config) []byte {
	var buf bytes.Buffer
	for i := 0; i < cfg.Rows; i++ {
		buf.Write(mustJSON(b, scansim.RowAt(cfg, i, cfg.Base, false)))
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func mustJSON(b *testing.B, v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
