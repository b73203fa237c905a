// Package pushjson encodes and decodes push.Notification and push.Job exactly as encoding/json
// does, without reflection.
//
// It owns one thing: the JSON of the push record and of the job, which every push writes once
// at intake and fan-out reads and rewrites several times (the planner's update, the task's read,
// the completion). encoding/json's reflection was about a quarter of fan-out's CPU per push that
// matched nothing (docs/decisions.md, "Push records without reflection").
//
// The contract, held by the differential fuzz targets in this package:
//   - AppendNotification and AppendJob append the bytes json.Marshal writes, or fail where it
//     fails;
//   - DecodeNotification and DecodeJob give what json.Unmarshal gives into a zero value, and
//     fail where it fails.
//
// Decoding takes a fast path for the shape the encoders write (no whitespace, the fields'
// exact names, plain strings, integer numbers) and hands anything else to
// json.Unmarshal, so a record written by another encoder still reads the same.
//
// Concurrency: no shared mutable state; decoded strings and raw members never alias the input.
// The strings of one decoded value share one copy of it.
package pushjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
)

// AppendNotification appends json.Marshal(n) to dst. On error dst is returned as it was.
func AppendNotification(dst []byte, n *push.Notification) ([]byte, error) {
	if !timesOK(n.CreatedAt, n.UpdatedAt, n.PushTime, n.ExpiresAt) || (n.PendingJob != nil && !jobTimesOK(n.PendingJob)) {
		return marshalFallback(dst, n)
	}
	// One allocation of about the record's size: the store keeps the documents it wrote last
	// (its record cache counts their length), and a queued record is about 920 bytes.
	size := recordFixed + len(n.Data) + len(n.Where) + len(n.ReqID) + 128*len(n.Counts) +
		40*(len(n.Channels)+len(n.TasksFinished)+len(n.Errors))
	if n.PendingJob != nil {
		size += jobSize(n.PendingJob)
	}
	b := slices.Grow(dst, size)
	b = append(b, `{"objectId":`...)
	b = jsondoc.AppendString(b, n.ObjectID)
	b = append(b, `,"appId":`...)
	b = jsondoc.AppendString(b, n.AppID)
	b = append(b, `,"notificationId":`...)
	b = jsondoc.AppendString(b, n.NotificationID)
	b = append(b, `,"jobId":`...)
	b = jsondoc.AppendString(b, n.JobID)
	b = append(b, `,"status":`...)
	b = jsondoc.AppendString(b, n.Status)
	b = append(b, `,"createdAt":`...)
	b = appendTime(b, n.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = appendTime(b, n.UpdatedAt)
	b = append(b, `,"kind":`...)
	b = jsondoc.AppendString(b, string(n.Kind))
	b = append(b, `,"data":`...)
	var ok bool
	if b, ok = appendRaw(b, n.Data); !ok {
		return marshalFallback(dst, n)
	}
	if len(n.Where) > 0 {
		b = append(b, `,"where":`...)
		if b, ok = appendRaw(b, n.Where); !ok {
			return marshalFallback(dst, n)
		}
	}
	if len(n.Channels) > 0 {
		b = append(b, `,"channels":`...)
		b = appendStrings(b, n.Channels)
	}
	b = optString(b, `,"deviceType":`, n.DeviceType)
	b = optInt(b, `,"deviceCount":`, int64(n.DeviceCount))
	b = append(b, `,"prod":`...)
	b = jsondoc.AppendString(b, n.Prod)
	b = optTime(b, `,"pushTime":`, n.PushTime)
	b = optTime(b, `,"expiresAt":`, n.ExpiresAt)
	b = optInt(b, `,"expirationInterval":`, n.ExpirationInterval)
	b = optInt(b, `,"flowControl":`, int64(n.FlowControl))
	b = optString(b, `,"reqId":`, n.ReqID)
	b = optString(b, `,"channelPolicy":`, n.ChannelPolicy)
	b = optString(b, `,"messageClass":`, n.MessageClass)
	b = optInt(b, `,"scheduledId":`, n.ScheduledID)
	b = append(b, `,"tasks":`...)
	b = strconv.AppendInt(b, int64(n.Tasks), 10)
	b = append(b, `,"tasksDone":`...)
	b = strconv.AppendInt(b, int64(n.TasksDone), 10)
	if len(n.Counts) > 0 {
		b = append(b, `,"counts":`...)
		b = appendCounts(b, n.Counts)
	}
	if len(n.Errors) > 0 {
		b = append(b, `,"errors":`...)
		b = appendStrings(b, n.Errors)
	}
	b = optString(b, `,"stopped":`, n.Stopped)
	if len(n.TasksFinished) > 0 {
		b = append(b, `,"tasksFinished":`...)
		b = appendStrings(b, n.TasksFinished)
	}
	if n.PendingJob != nil {
		b = append(b, `,"pendingJob":`...)
		if b, ok = appendJob(b, n.PendingJob); !ok {
			return marshalFallback(dst, n)
		}
	}
	b = optString(b, `,"pendingBy":`, n.PendingBy)
	return append(b, '}'), nil
}

// AppendJob appends json.Marshal(j) to dst. On error dst is returned as it was.
func AppendJob(dst []byte, j *push.Job) ([]byte, error) {
	if !jobTimesOK(j) {
		return marshalFallback(dst, j)
	}
	b, ok := appendJob(slices.Grow(dst, jobSize(j)), j)
	if !ok {
		return marshalFallback(dst, j)
	}
	return b, nil
}

// recordFixed and jobFixed are about the bytes of a record's and a job's members other than
// data, where and the lists: ids, times, status and names (370 and 231 for a queued push).
const (
	recordFixed = 384
	jobFixed    = 256
)

// jobSize is about the length of j's encoding.
func jobSize(j *push.Job) int {
	return jobFixed + len(j.Data) + len(j.Where) + 40*len(j.DeviceIDs)
}

// appendJob appends j, whose times are encodable; false when a raw member is not compact,
// HTML-safe valid JSON (the caller falls back to encoding/json).
func appendJob(b []byte, j *push.Job) ([]byte, bool) {
	var ok bool
	b = append(b, `{"id":`...)
	b = jsondoc.AppendString(b, j.ID)
	b = append(b, `,"appId":`...)
	b = jsondoc.AppendString(b, j.AppID)
	b = append(b, `,"nobj":`...)
	b = jsondoc.AppendString(b, j.NotificationObjectID)
	b = append(b, `,"nid":`...)
	b = jsondoc.AppendString(b, j.NotificationID)
	b = append(b, `,"kind":`...)
	b = jsondoc.AppendString(b, string(j.Kind))
	if len(j.Where) > 0 {
		b = append(b, `,"where":`...)
		if b, ok = appendRaw(b, j.Where); !ok {
			return b, false
		}
	}
	b = optString(b, `,"deviceType":`, j.DeviceType)
	if len(j.DeviceIDs) > 0 {
		b = append(b, `,"deviceIds":`...)
		b = appendStrings(b, j.DeviceIDs)
	}
	b = optString(b, `,"vendor":`, j.Vendor)
	b = optString(b, `,"deviceProfile":`, j.DeviceProfile)
	b = append(b, `,"data":`...)
	if b, ok = appendRaw(b, j.Data); !ok {
		return b, false
	}
	b = append(b, `,"prod":`...)
	b = jsondoc.AppendString(b, j.Prod)
	b = optString(b, `,"topic":`, j.Topic)
	b = optString(b, `,"apnsTeamId":`, j.APNsTeamID)
	b = optString(b, `,"notificationChannel":`, j.NotificationChannel)
	b = optTime(b, `,"expiresAt":`, j.ExpiresAt)
	b = optInt(b, `,"flowControl":`, int64(j.FlowControl))
	b = optString(b, `,"channelPolicy":`, j.ChannelPolicy)
	b = optString(b, `,"messageClass":`, j.MessageClass)
	b = append(b, `,"createdAt":`...)
	b = appendTime(b, j.CreatedAt)
	b = optTime(b, `,"queryAt":`, j.QueryAt)
	return append(b, '}'), true
}

func marshalFallback(dst []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

func jobTimesOK(j *push.Job) bool { return timesOK(j.ExpiresAt, j.CreatedAt, j.QueryAt) }

// timesOK says whether time.Time.MarshalJSON encodes each of ts as its RFC 3339 format: a
// year in [0, 9999] and a zone offset of whole minutes under 24 hours. Others are left to
// encoding/json (which fails on them).
func timesOK(ts ...time.Time) bool {
	for _, t := range ts {
		if y := t.Year(); y < 0 || y > 9999 {
			return false
		}
		if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
			return false
		}
	}
	return true
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func optTime(b []byte, key string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	return appendTime(append(b, key...), t)
}

func optString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsondoc.AppendString(append(b, key...), s)
}

func optInt(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsondoc.AppendString(b, s)
	}
	return append(b, ']')
}

// appendRaw appends a json.RawMessage as encoding/json writes it (compacted, HTML-escaped):
// nil as null; false when raw is not valid JSON or would change in the writing (whitespace
// between tokens, < > & or U+2028/9 to escape), which the caller leaves to encoding/json.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	if !asWritten(raw) {
		return b, false
	}
	if end, ok := jsondoc.CompactValueEnd(raw, 0); !ok || end != len(raw) {
		return b, false // not valid JSON (as json.Valid would say), or too deep to walk here
	}
	return append(b, raw...), true
}

// asWritten says whether encoding/json's compaction with HTML escaping leaves raw, if valid, as
// it is.
func asWritten(raw []byte) bool {
	in := false // in a string
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in:
			i++ // the escaped byte
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9):
			return false
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// appendCounts appends a push.Counts (a map: keys sorted) of push.Tally values.
func appendCounts(b []byte, c push.Counts) []byte {
	b = append(b, '{')
	for i, k := range sortedKeys(c) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsondoc.AppendString(b, k)
		b = append(b, ':')
		t := c[k]
		b = append(b, `{"targets":`...)
		b = strconv.AppendInt(b, t.Targets, 10)
		b = append(b, `,"sent":`...)
		b = strconv.AppendInt(b, t.Sent, 10)
		b = append(b, `,"failed":`...)
		b = strconv.AppendInt(b, t.Failed, 10)
		b = append(b, `,"expired":`...)
		b = strconv.AppendInt(b, t.Expired, 10)
		b = append(b, `,"deferred":`...)
		b = strconv.AppendInt(b, t.Deferred, 10)
		b = append(b, `,"invalidTokens":`...)
		b = strconv.AppendInt(b, t.InvalidTokens, 10)
		if len(t.FailedBy) > 0 {
			b = append(b, `,"failedBy":{`...)
			for j, fk := range sortedKeys(t.FailedBy) {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsondoc.AppendString(b, fk)
				b = append(b, ':')
				b = strconv.AppendInt(b, t.FailedBy[fk], 10)
			}
			b = append(b, '}')
		}
		b = optInt(b, `,"arrivals":`, t.Arrivals)
		b = append(b, '}')
	}
	return append(b, '}')
}

// sortedKeys returns m's keys in the order encoding/json writes them: sorted as strings. (Its
// order is of the keys as they are, before escaping.)
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// insertion sort: a push has a few channels and failure classes
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// DecodeNotification decodes a push record as json.Unmarshal(data, n) does into a zero n.
func DecodeNotification(data []byte, n *push.Notification) error {
	*n = push.Notification{}
	d := decoder{b: data}
	if d.notification(n) && d.end() {
		return nil
	}
	*n = push.Notification{}
	return json.Unmarshal(data, n)
}

// DecodeJob decodes a job as json.Unmarshal(data, j) does into a zero j.
func DecodeJob(data []byte, j *push.Job) error {
	*j = push.Job{}
	d := decoder{b: data}
	if d.job(j) && d.end() {
		return nil
	}
	*j = push.Job{}
	return json.Unmarshal(data, j)
}

// decoder is the fast path: each method reports false on anything outside the shape the
// encoders write, and the caller starts again with encoding/json. Decoded strings are cut from
// one copy of the input (src), made at the first.
type decoder struct {
	b   []byte
	i   int
	src string
}

func (d *decoder) end() bool { return d.i == len(d.b) }

func (d *decoder) lit(s string) bool {
	if !bytes.HasPrefix(d.b[d.i:], []byte(s)) {
		return false
	}
	d.i += len(s)
	return true
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// object walks an object's members, calling member with each key (the decoder then stands at
// its value). Keys must be plain strings.
func (d *decoder) object(member func(key []byte) bool) bool {
	if !d.lit("{") {
		return false
	}
	if d.lit("}") {
		return true
	}
	for {
		k, ok := d.plain()
		if !ok || !d.lit(":") || !member(k) {
			return false
		}
		if d.lit("}") {
			return true
		}
		if !d.lit(",") {
			return false
		}
	}
}

// plain reads a string without escapes, control bytes or invalid UTF-8 (which json.Unmarshal
// takes as it is) and returns its bytes, aliasing the input.
func (d *decoder) plain() ([]byte, bool) {
	start, end, ok := jsondoc.PlainString(d.b, d.i)
	if !ok {
		return nil, false
	}
	d.i = end + 1
	return d.b[start:end], true
}

func (d *decoder) str(dst *string) bool {
	s, ok := d.plain()
	if !ok {
		return false
	}
	if d.src == "" {
		d.src = string(d.b)
	}
	start := d.i - 1 - len(s) // plain left d.i past the closing quote
	*dst = d.src[start : start+len(s)]
	return true
}

func (d *decoder) strings(dst *[]string) bool {
	if !d.lit("[") {
		return false
	}
	out := []string{}
	if !d.lit("]") {
		for {
			var s string
			if !d.str(&s) {
				return false
			}
			out = append(out, s)
			if d.lit("]") {
				break
			}
			if !d.lit(",") {
				return false
			}
		}
	}
	*dst = out
	return true
}

// int64 reads an integer as encoding/json does into an int64: optional minus, no leading zero,
// no fraction or exponent.
func (d *decoder) int64(dst *int64) bool {
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	if j == digits || (d.b[digits] == '0' && j > digits+1) {
		return false
	}
	if j < len(d.b) && (d.b[j] == '.' || d.b[j] == 'e' || d.b[j] == 'E') {
		return false
	}
	v, err := strconv.ParseInt(string(d.b[d.i:j]), 10, 64)
	if err != nil {
		return false
	}
	*dst = v
	d.i = j
	return true
}

func (d *decoder) int(dst *int) bool {
	var v int64
	if !d.int64(&v) || int64(int(v)) != v {
		return false
	}
	*dst = int(v)
	return true
}

func (d *decoder) time(dst *time.Time) bool {
	if d.peek() != '"' {
		return false
	}
	end := bytes.IndexByte(d.b[d.i+1:], '"')
	if end < 0 {
		return false
	}
	end += d.i + 2
	if dst.UnmarshalJSON(d.b[d.i:end]) != nil {
		return false
	}
	d.i = end
	return true
}

// raw reads a value whole, as json.RawMessage keeps it (a copy).
func (d *decoder) raw(dst *json.RawMessage) bool {
	end, ok := jsondoc.CompactValueEnd(d.b, d.i)
	if !ok {
		return false
	}
	*dst = append(json.RawMessage(nil), d.b[d.i:end]...)
	d.i = end
	return true
}

// first reports whether *seen was false, and sets it. A repeated key whose value is a map or
// a pointer to a struct leaves the fast path: encoding/json merges the second into the first.
// Any other repeated key's last value wins, here as there.
func first(seen *bool) bool {
	was := *seen
	*seen = true
	return !was
}

func (d *decoder) notification(n *push.Notification) bool {
	var seenCounts, seenJob bool
	return d.object(func(k []byte) bool {
		switch string(k) {
		case "objectId":
			return d.str(&n.ObjectID)
		case "appId":
			return d.str(&n.AppID)
		case "notificationId":
			return d.str(&n.NotificationID)
		case "jobId":
			return d.str(&n.JobID)
		case "status":
			return d.str(&n.Status)
		case "createdAt":
			return d.time(&n.CreatedAt)
		case "updatedAt":
			return d.time(&n.UpdatedAt)
		case "kind":
			return d.str((*string)(&n.Kind))
		case "data":
			return d.raw(&n.Data)
		case "where":
			return d.raw(&n.Where)
		case "channels":
			return d.strings(&n.Channels)
		case "deviceType":
			return d.str(&n.DeviceType)
		case "deviceCount":
			return d.int(&n.DeviceCount)
		case "prod":
			return d.str(&n.Prod)
		case "pushTime":
			return d.time(&n.PushTime)
		case "expiresAt":
			return d.time(&n.ExpiresAt)
		case "expirationInterval":
			return d.int64(&n.ExpirationInterval)
		case "flowControl":
			return d.int(&n.FlowControl)
		case "reqId":
			return d.str(&n.ReqID)
		case "channelPolicy":
			return d.str(&n.ChannelPolicy)
		case "messageClass":
			return d.str(&n.MessageClass)
		case "scheduledId":
			return d.int64(&n.ScheduledID)
		case "tasks":
			return d.int(&n.Tasks)
		case "tasksDone":
			return d.int(&n.TasksDone)
		case "counts":
			return first(&seenCounts) && d.counts(&n.Counts)
		case "errors":
			return d.strings(&n.Errors)
		case "stopped":
			return d.str(&n.Stopped)
		case "tasksFinished":
			return d.strings(&n.TasksFinished)
		case "pendingJob":
			if !first(&seenJob) || d.peek() != '{' {
				return false
			}
			n.PendingJob = &push.Job{}
			return d.job(n.PendingJob)
		case "pendingBy":
			return d.str(&n.PendingBy)
		}
		return false
	})
}

func (d *decoder) job(j *push.Job) bool {
	return d.object(func(k []byte) bool {
		switch string(k) {
		case "id":
			return d.str(&j.ID)
		case "appId":
			return d.str(&j.AppID)
		case "nobj":
			return d.str(&j.NotificationObjectID)
		case "nid":
			return d.str(&j.NotificationID)
		case "kind":
			return d.str((*string)(&j.Kind))
		case "where":
			return d.raw(&j.Where)
		case "deviceType":
			return d.str(&j.DeviceType)
		case "deviceIds":
			return d.strings(&j.DeviceIDs)
		case "vendor":
			return d.str(&j.Vendor)
		case "deviceProfile":
			return d.str(&j.DeviceProfile)
		case "data":
			return d.raw(&j.Data)
		case "prod":
			return d.str(&j.Prod)
		case "topic":
			return d.str(&j.Topic)
		case "apnsTeamId":
			return d.str(&j.APNsTeamID)
		case "notificationChannel":
			return d.str(&j.NotificationChannel)
		case "expiresAt":
			return d.time(&j.ExpiresAt)
		case "flowControl":
			return d.int(&j.FlowControl)
		case "channelPolicy":
			return d.str(&j.ChannelPolicy)
		case "messageClass":
			return d.str(&j.MessageClass)
		case "createdAt":
			return d.time(&j.CreatedAt)
		case "queryAt":
			return d.time(&j.QueryAt)
		}
		return false
	})
}

func (d *decoder) counts(dst *push.Counts) bool {
	c := push.Counts{}
	ok := d.object(func(ch []byte) bool {
		var t push.Tally
		var seenFailedBy bool
		if !d.object(func(k []byte) bool {
			switch string(k) {
			case "targets":
				return d.int64(&t.Targets)
			case "sent":
				return d.int64(&t.Sent)
			case "failed":
				return d.int64(&t.Failed)
			case "expired":
				return d.int64(&t.Expired)
			case "deferred":
				return d.int64(&t.Deferred)
			case "invalidTokens":
				return d.int64(&t.InvalidTokens)
			case "arrivals":
				return d.int64(&t.Arrivals)
			case "failedBy":
				if !first(&seenFailedBy) {
					return false
				}
				t.FailedBy = map[string]int64{}
				return d.object(func(fk []byte) bool {
					var v int64
					if !d.int64(&v) {
						return false
					}
					t.FailedBy[string(fk)] = v
					return true
				})
			}
			return false
		}) {
			return false
		}
		c[string(ch)] = t
		return true
	})
	if ok {
		*dst = c
	}
	return ok
}
