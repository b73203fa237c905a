package receipt

import (
	"testing"
)

// FuzzReceiptParse: no vendor's receipt parser panics or returns more than maxEntries
// entries, whatever the body.
func FuzzReceiptParse(f *testing.F) {
	for _, seed := range []string{
		`data=%7B%22m%22%3A%7B%22param%22%3A%22abc%3An%22%2C%22type%22%3A1%2C%22targets%22%3A%22a%2Cb%22%7D%7D`,
		`{"statuses":[{"biTag":"abc:n","token":"t","status":2,"timestamp":1}]}`,
		`[{"messageId":"m","registrationIds":"a,b","param":"abc:n","eventType":"push_arrive","eventTime":"1"}]`,
		`cb=%7B%22m%22%3A%7B%22param%22%3A%22abc%3An%22%2C%22type%22%3A1%2C%22targets%22%3A%5B%22a%22%5D%7D%7D`,
		`{"1":{"param":"abc:n","targets":"a"}}`, `{`, `[]`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, v := range Vendors {
			es, err := parse(v, []byte(body))
			if err == nil && len(es) > maxEntries {
				t.Fatalf("%s: %d entries", v, len(es))
			}
			for _, e := range es {
				if e.PushID == "" || e.Kind == 0 {
					t.Fatalf("%s: entry %+v", v, e)
				}
			}
		}
	})
}
