package query

import (
	"encoding/json"
	"testing"
)

// benchDoc is an installation with about 15 fields, decoded as the store decodes documents.
const benchDoc = `{
	"objectId": "5f1a2b3c4d5e6f7a8b9c0d1e", "deviceType": "ios",
	"deviceToken": "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
	"installationId": "0e3f5a9c-8a62-4c5e-9f8e-4f4b5d9c1a2b", "channels": ["news", "sports", "weather"],
	"badge": 7, "timeZone": "Asia/Shanghai", "apnsTopic": "com.example.app", "apnsTeamId": "TEAM123456",
	"deviceProfile": "", "valid": true, "appVersion": "4.2.1", "localeIdentifier": "zh-CN",
	"createdAt": "2024-01-02T03:04:05.678Z", "updatedAt": "2024-06-01T10:00:00.000Z"
}`

func benchMatch(b *testing.B, where string) {
	q, err := Parse(json.RawMessage(where))
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(benchDoc), &m); err != nil {
		b.Fatal(err)
	}
	d := MapDoc(m)
	if !q.Match(d) {
		b.Fatalf("query %s does not match the bench doc", where)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if !q.Match(d) {
			b.Fatal("no match")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}

// BenchmarkQueryMatch3 is the common push audience: platform, channel and one custom field.
func BenchmarkQueryMatch3(b *testing.B) {
	benchMatch(b, `{"deviceType":"ios","channels":"sports","badge":{"$gt":3}}`)
}

func BenchmarkQueryMatchDateRegexIn(b *testing.B) {
	benchMatch(b, `{"updatedAt":{"$gte":{"__type":"Date","iso":"2024-03-01T00:00:00Z"}},"timeZone":{"$regex":"^asia/","$options":"i"},"appVersion":{"$in":["4.2.0","4.2.1","4.3.0"]}}`)
}

func BenchmarkQueryMatchOr(b *testing.B) {
	benchMatch(b, `{"$or":[{"channels":{"$all":["news","music"]}},{"badge":{"$lt":3}},{"localeIdentifier":"zh-CN"}],"valid":{"$ne":false}}`)
}

func BenchmarkQueryParse(b *testing.B) {
	where := json.RawMessage(`{"deviceType":"ios","channels":"sports","badge":{"$gt":3},"updatedAt":{"$gte":{"__type":"Date","iso":"2024-03-01T00:00:00Z"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(where); err != nil {
			b.Fatal(err)
		}
	}
}
