package jsondoc

import (
	"encoding/json"
	"testing"
)

// installationDoc is a typical stored installation (about 300 bytes), the document the
// installation upsert endpoint decodes twice and encodes once per request.
const installationDoc = `{"deviceType":"android","installationId":"dev-1","deviceToken":"fcm:APA91bH-x7Qk2","channels":["news","c3"],"appVersion":"1.2","badge":3,"timeZone":"Asia/Shanghai","localeIdentifier":"zh-CN","createdAt":"2024-05-01T10:00:00.000Z","updatedAt":"2024-05-02T08:30:00.000Z","geo":{"__type":"GeoPoint","latitude":1.5,"longitude":-2}}`

func BenchmarkJSONDocDecode(b *testing.B) {
	in := []byte(installationDoc)
	b.Run("jsondoc", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := DecodeObject(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(in, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkJSONDocMarshal(b *testing.B) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(installationDoc), &doc); err != nil {
		b.Fatal(err)
	}
	b.Run("jsondoc", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(installationDoc)))
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendMarshal(buf[:0], doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsondoc_new_buffer", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(installationDoc)))
		for b.Loop() {
			if _, err := AppendMarshal(nil, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(installationDoc)))
		for b.Loop() {
			if _, err := json.Marshal(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
