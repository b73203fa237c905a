package intake

import (
	"strconv"
)

// App is one app's identity and keys, as the admin API answered them.
type App struct {
	ID        string `json:"appId"`
	AppKey    string `json:"appKey"`
	MasterKey string `json:"masterKey"`
}

// Headers of pushd's REST API (api.HeaderAppID, api.HeaderKey): spelled out here so
// that the load test does not import the server.
const (
	headerAppID = "X-SVC-Id"
	headerKey   = "X-SVC-Key"
)

// heads builds, per app, a request's bytes up to the value of Content-Length.
func heads(apps []App, host, path string, master bool) [][]byte {
	out := make([][]byte, len(apps))
	for i, a := range apps {
		key := a.AppKey
		if master {
			key = a.MasterKey + ",master"
		}
		out[i] = []byte("POST " + path + " HTTP/1.1\r\nHost: " + host +
			"\r\nContent-Type: application/json\r\n" + headerAppID + ": " + a.ID +
			"\r\n" + headerKey + ": " + key + "\r\nContent-Length: ")
	}
	return out
}

// finish appends Content-Length, the blank line and body to dst (which holds the head).
func finish(dst, body []byte) []byte {
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	return append(append(dst, "\r\n\r\n"...), body...)
}

// PushRequests makes the intake's typical push: POST /1.1/push with the master key of the
// apps in turn, half of them to channels, half with a where on deviceType and a custom field,
// each with a req_id unique in the run (as the SDKs and the load test's other scenarios send
// one: run, at most 8 letters and digits, then i in base 36 on reqIDDigits digits; pushd takes
// 16 at most) and an alert with a title and a badge. No installation is subscribed to the channels
// or matches the where, so fan-out plans each push and finds no target: the figures are the
// intake's, not the sender's.
func PushRequests(apps []App, host, run string) RequestFunc {
	hs := heads(apps, host, "/1.1/push", true)
	return func(dst []byte, i int64) []byte {
		dst = append(dst, hs[i%int64(len(hs))]...)
		var b [512]byte
		body := b[:0]
		if i%2 == 0 {
			body = append(body, `{"channels":["intake-none-`...)
			body = strconv.AppendInt(body, i%16, 10)
			body = append(body, `"],`...)
		} else {
			body = append(body, `{"where":{"deviceType":"ios","appVersion":"intake-none-`...)
			body = strconv.AppendInt(body, i%16, 10)
			body = append(body, `"},`...)
		}
		body = append(body, `"data":{"alert":"Sale starts now: 20% off everything","title":"Shop","badge":"Increment","sound":"default"},"expiration_interval":3600,"req_id":"`...)
		body = append(body, run...)
		body = appendFixed36(body, i)
		body = append(body, `"}`...)
		return finish(dst, body)
	}
}

// reqIDDigits is the width of a push's number in its req_id. A fixed width keeps the req_ids
// of runs whose tags differ in length apart (the warm-up's run+"w" and the run's: with the
// number's shortest form, run's push 1152, "w0" in base 36, was the warm-up's push 0, answered
// from its req_id claim with no new push); 36^6 numbers are more than any load sends.
const reqIDDigits = 6

// appendFixed36 appends i in base 36, zero-padded to reqIDDigits digits.
func appendFixed36(dst []byte, i int64) []byte {
	var b [16]byte
	d := strconv.AppendInt(b[:0], i, 36)
	for range reqIDDigits - len(d) {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// UpsertRequests makes POST /1.1/installations for device i mod devices, with the app keys
// of the device's app (the apps in turn over the devices): the first pass over the devices
// creates them, later passes update them (a new appVersion every time), as SDKs do at every
// start. Android installations with two channels, one of seven.
func UpsertRequests(apps []App, host, run string, devices int64) RequestFunc {
	hs := heads(apps, host, "/1.1/installations", false)
	return func(dst []byte, i int64) []byte {
		// The app follows the device, not i: a device sent to another app on its next
		// pass would be created there again, and no upsert would ever be an update.
		d := i % devices
		dst = append(dst, hs[d%int64(len(hs))]...)
		var b [512]byte
		body := append(b[:0], `{"deviceType":"android","installationId":"`...)
		body = append(body, run...)
		body = append(body, "-dev-"...)
		body = strconv.AppendInt(body, d, 10)
		body = append(body, `","channels":["news","c`...)
		body = strconv.AppendInt(body, i%7, 10)
		body = append(body, `"],"appVersion":"1.`...)
		body = strconv.AppendInt(body, i, 10)
		body = append(body, `","timeZone":"Asia/Shanghai"}`...)
		return finish(dst, body)
	}
}
