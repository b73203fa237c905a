package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/pushd/pushd/push"
)

// Format is the shape of an export file.
type Format string

const (
	FormatAuto    Format = ""        // decided from the name and the first bytes
	FormatLines   Format = "jsonl"   // one JSON object per line: pushd export, Parse's JSON lines
	FormatResults Format = "results" // {"results":[...]}: Parse's export, a saved scan or query reply
	FormatArray   Format = "array"   // [...]: a JSON array of objects
	FormatBSON    Format = "bson"    // concatenated BSON documents: mongodump's _Installation.bson
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatAuto, FormatLines, FormatResults, FormatArray, FormatBSON:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q: want jsonl, results, array or bson", s)
}

// maxLine bounds one JSON line: a stored document is at most 32 KiB, an exported one with
// the original's internal fields a little more.
const maxLine = 4 << 20

var resultsHead = regexp.MustCompile(`^\s*\{\s*"results"\s*:\s*\[`)

// detect decides the format of an input from its name and first bytes.
func detect(name string, br *bufio.Reader) Format {
	if strings.HasSuffix(strings.ToLower(name), ".bson") {
		return FormatBSON
	}
	head, _ := br.Peek(4096)
	trimmed := bytes.TrimLeft(head, " \t\r\n\xef\xbb\xbf")
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		return FormatArray
	case resultsHead.Match(head):
		return FormatResults
	case len(head) >= 5 && head[3] == 0 && len(trimmed) > 0 && trimmed[0] != '{':
		return FormatBSON // a little-endian length below 16 MiB first: its last byte is 0
	}
	return FormatLines
}

// ReadFile feeds every row of an export to l, then flushes it. name (a file name or "")
// helps detect the format. progress, if not nil, is told how many bytes were read.
func ReadFile(ctx context.Context, l *Loader, r io.Reader, name string, f Format, progress func(bytes int64)) error {
	cr := &countingReader{r: r, progress: progress}
	br := bufio.NewReaderSize(cr, 1<<20)
	if f == FormatAuto {
		f = detect(name, br)
	}
	var err error
	switch f {
	case FormatLines:
		err = readLines(ctx, l, br)
	case FormatResults, FormatArray:
		err = readJSONArray(ctx, l, br, f == FormatResults)
	case FormatBSON:
		err = readBSON(ctx, l, br)
	}
	if err != nil {
		// The write in flight ends before the caller closes the store; rows not yet written
		// stay so (an admin request's body fits one batch: a broken one changes nothing).
		l.abandon()
		return err
	}
	return l.Sync(ctx)
}

type countingReader struct {
	r        io.Reader
	n        int64
	progress func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil {
		c.progress(c.n)
	}
	return n, err
}

func readLines(ctx context.Context, l *Loader, br *bufio.Reader) error {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			n--
			continue
		}
		if err := l.AddRaw(ctx, n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("cannot read row %d: a line is longer than %d bytes", n+1, maxLine)
		}
		return fmt.Errorf("cannot read row %d: %w", n+1, err)
	}
	return nil
}

// readJSONArray reads [...] or {"results":[...]} one element at a time.
func readJSONArray(ctx context.Context, l *Loader, br *bufio.Reader, results bool) error {
	dec := json.NewDecoder(br)
	if results {
		if err := expectDelim(dec, '{'); err != nil {
			return err
		}
		for {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("cannot read the export: %w", err)
			}
			if tok == "results" {
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("cannot read the export: %w", err)
			}
		}
	}
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	n := 0
	for dec.More() {
		n++
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("cannot read row %d of the export: %w", n, err)
		}
		if err := l.AddRaw(ctx, n, raw); err != nil {
			return err
		}
	}
	return nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("cannot read the export: %w", err)
	}
	if tok != d {
		return fmt.Errorf("cannot read the export: want %q, found %v", d, tok)
	}
	return nil
}

// errRow is a row-level decoding problem (the row is refused, the import goes on).
func errRow(format string, args ...any) *push.Error {
	return push.Errorf(push.CodeInvalidJSON, format, args...)
}
