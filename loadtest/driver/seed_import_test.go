package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// The bulk seed's bodies stay under the server's body cap, cover every device once, in order,
// and each line is the device's upsert body with the objectId the driver gives it.
func TestSeedImportChunks(t *testing.T) {
	pop, err := NewPopulation(PopulationSpec{RunID: "chunks", N: 3000, IOSFraction: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	devs := make([]*Device, len(pop.Main))
	for i := range pop.Main {
		devs[i] = &pop.Main[i]
	}
	const max = 16 << 10
	bodies, ends, err := importChunks(devs, "com.example", "ltchunks", max)
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) < 2 || len(bodies) != len(ends) || ends[len(ends)-1] != len(devs) {
		t.Fatalf("%d bodies ending at %v, want several covering %d devices", len(bodies), ends, len(devs))
	}
	i := 0
	for k, b := range bodies {
		if len(b) > max {
			t.Errorf("body %d: %d bytes, over %d", k, len(b), max)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			var row map[string]any
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatalf("body %d: %v", k, err)
			}
			body := devs[i].Body("com.example")
			body["objectId"] = fmt.Sprintf("ltchunks%08d", i)
			body["createdAt"], body["updatedAt"] = row["createdAt"], row["updatedAt"]
			if _, err := time.Parse(time.RFC3339, row["createdAt"].(string)); err != nil {
				t.Fatalf("line %d: createdAt: %v", i, err)
			}
			want, _ := json.Marshal(body)
			if devs[i].ObjectID != body["objectId"] {
				t.Fatalf("device %d: objectId %q, want %q", i, devs[i].ObjectID, body["objectId"])
			}
			if !bytes.Equal(line, want) {
				t.Fatalf("line %d = %s, want %s", i, line, want)
			}
			i++
		}
		if i != ends[k] {
			t.Fatalf("body %d ends at device %d, ends says %d", k, i, ends[k])
		}
	}
}
