package push

import "time"

// TimeLayout is the layout of every timestamp pushd writes: ISO 8601 UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in TimeLayout.
func FormatTime(t time.Time) string {
	var buf [len(TimeLayout)]byte
	return string(AppendTime(buf[:0], t))
}

// AppendTime appends t formatted in TimeLayout to b. Every upsert writes
// three of them; this is several times faster than time.Time.AppendFormat, which reads the
// layout anew on each call. Years outside 0–9999 take AppendFormat.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

// appendDigits appends the n ≤ 4 lowest decimal digits of v ≥ 0, zero-padded.
func appendDigits(b []byte, v, n int) []byte {
	start := len(b)
	b = append(b, "0000"[:n]...)
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}
