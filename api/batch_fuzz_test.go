package api

import (
	"encoding/json"
	"testing"
)

// FuzzBatchDecode: decodeBatch reads outside input; it never panics, and what it accepts is
// a bounded list of requests that each name a method and a path.
func FuzzBatchDecode(f *testing.F) {
	for _, s := range []string{
		`{"requests":[{"method":"POST","path":"/1.1/installations","body":{"deviceType":"ios","__internalId":"u"},"params":{"fetchWhenSave":true}}]}`,
		`{"requests":[{"method":"GET","path":"/1.1/classes/_Installation","params":{"where":{"a":1},"limit":10}}]}`,
		`{"requests":[{"method":"DELETE","path":"/1.1/classes/_Installation/a,b","body":{}}]}`,
		`{"requests":[]}`, `{"requests":null}`, `{"requests":[1]}`, `[]`, `{"requests":[{"method":"GET"}`,
	} {
		f.Add([]byte(s))
		f.Add([]byte(s[:len(s)/2]))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, perr := decodeBatch(b)
		if perr != nil {
			return
		}
		if len(ops) > maxBatchOps || !json.Valid(b) {
			t.Fatalf("accepted %d requests from %q", len(ops), b)
		}
		for _, op := range ops {
			if op.Method == "" || op.Path == "" {
				t.Fatalf("accepted a request without method or path from %q", b)
			}
		}
	})
}
