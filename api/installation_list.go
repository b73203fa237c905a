package api

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store"
)

// Installation query limits.
const (
	defaultLimit = 100 // as the original service
	maxLimit     = 1000
	// maxSkip bounds the sort heap (skip+limit documents kept in memory) and the work of
	// deep pagination; page with a where on objectId or createdAt instead.
	maxSkip = 10_000
	// listTimeout bounds one query; a full scan of a large app is a job for push, not REST.
	listTimeout = 30 * time.Second
)

var errStopScan = errors.New("stop scan")

// OrderKey is one field of an `order` parameter; "-field" sorts descending.
type OrderKey struct {
	Field string
	Desc  bool
}

// Compare compares two values of the key's field in the key's direction, with query.Compare,
// except that an array sorts as Mongo (and so Parse) sorts it: by its smallest element
// ascending and by its largest descending, and an empty array below null and missing.
func (k OrderKey) Compare(a, b any) int {
	a, emptyA := k.sortValue(a)
	b, emptyB := k.sortValue(b)
	var c int
	switch {
	case emptyA && emptyB:
	case emptyA:
		c = -1
	case emptyB:
		c = 1
	default:
		c = query.Compare(a, b)
	}
	if k.Desc {
		return -c
	}
	return c
}

// sortValue is what v sorts by in the key's direction: v itself, or an array's smallest
// (ascending) or largest (descending) element; empty reports an empty array.
func (k OrderKey) sortValue(v any) (_ any, empty bool) {
	arr, ok := v.([]any)
	if !ok {
		return v, false
	}
	if len(arr) == 0 {
		return nil, true
	}
	best := arr[0]
	for _, e := range arr[1:] {
		if c := query.Compare(e, best); (c < 0 && !k.Desc) || (c > 0 && k.Desc) {
			best = e
		}
	}
	return best, false
}

// Value is the key's field in doc, read as a where reads a field (query.FieldValue): a dotted
// field goes into nested objects, and into every object of an array on its way, the values
// found there acting as one array, which sorts as an array does (Compare). Missing is nil.
func (k OrderKey) Value(doc map[string]any) any {
	v, _ := query.FieldValue(doc, k.Field)
	return v
}

// CompareDocs compares two documents by order: the first key that differs decides; 0 when
// every key is equal (callers break ties).
func CompareDocs(order []OrderKey, a, b map[string]any) int {
	for _, k := range order {
		if c := k.Compare(k.Value(a), k.Value(b)); c != 0 {
			return c
		}
	}
	return 0
}

// checkPath checks a field path of order or keys: its root by checkField, as Parse checks
// only the root name; the other parts must be non-empty and free of '$'.
func checkPath(path string, checkField func(string) *push.Error) *push.Error {
	root, rest, nested := strings.Cut(path, ".")
	if perr := checkField(root); perr != nil {
		return perr
	}
	if !nested {
		return nil
	}
	for _, part := range strings.Split(rest, ".") {
		if part == "" {
			return push.Errorf(push.CodeInvalidKeyName, "invalid field path %q: empty part", path)
		}
		if strings.Contains(part, "$") {
			return push.Errorf(push.CodeInvalidKeyChar, "invalid field path %q: '$' is not allowed", path)
		}
	}
	return nil
}

// ListParams are the query parameters of a listing (GET /1.1/installations,
// GET /1.1/notifications), parsed with LeanCloud's rules by ParseListParams.
type ListParams struct {
	Where *query.Query
	Limit int             // 0..1000, default 100
	Skip  int             // 0..10,000
	Order []OrderKey      // nil: the listing's own default order
	Keys  map[string]bool // nil: every field; else the named ones plus objectId, createdAt, updatedAt
	Count bool            // count=1 or count=true: add the number of matches
}

// ParseListParams parses where, limit, skip, order, keys and count. limit: an integer outside
// 0..1000 falls back to the default 100 (the original service's behaviour), a non-integer is 300;
// skip outside 0..10,000 or not an integer is 300; where errors are 107/111/300, and its
// relative times count from now. checkField validates the field names of order and keys (nil:
// the installation field-name rule).
func ParseListParams(args *fasthttp.Args, now time.Time, checkField func(name string) *push.Error) (*ListParams, *push.Error) {
	if checkField == nil {
		checkField = checkFieldName
	}
	p := &ListParams{Limit: defaultLimit}
	where := append([]byte(nil), args.Peek("where")...)
	q, err := query.ParseAt(where, now)
	if err != nil {
		if pe := asPushError(err); pe != nil {
			return nil, pe
		}
		return nil, push.Errorf(push.CodeInvalidQuery, "invalid where: %v", err)
	}
	p.Where = q
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return nil, push.Errorf(push.CodeInvalidQuery, "limit must be an integer")
		}
		if n >= 0 && n <= maxLimit {
			p.Limit = n
		} // out of range ⇒ the default, as the original service does
	}
	if v := args.Peek("skip"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return nil, push.Errorf(push.CodeInvalidQuery, "skip must be a non-negative integer")
		}
		if n > maxSkip {
			return nil, push.Errorf(push.CodeInvalidQuery, "skip may be at most %d; page with a where condition instead", maxSkip)
		}
		p.Skip = n
	}
	// Empty entries of order and keys ("a,", "a,,b") are skipped, as Parse does.
	if v := args.Peek("order"); len(v) > 0 {
		for _, f := range strings.Split(string(v), ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			k := OrderKey{Field: f}
			if strings.HasPrefix(f, "-") {
				k = OrderKey{Field: f[1:], Desc: true}
			}
			if perr := checkPath(k.Field, checkField); perr != nil {
				return nil, perr
			}
			// A field named twice sorts as its last mention says (Parse builds a map).
			p.Order = slices.DeleteFunc(p.Order, func(o OrderKey) bool { return o.Field == k.Field })
			p.Order = append(p.Order, k)
		}
	}
	if v := args.Peek("keys"); len(v) > 0 {
		p.Keys = map[string]bool{fObjectID: true, fCreatedAt: true, fUpdatedAt: true}
		for _, f := range strings.Split(string(v), ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if perr := checkPath(f, checkField); perr != nil {
				return nil, perr
			}
			root, _, _ := strings.Cut(f, ".") // "a.b" returns all of a, as Parse does
			p.Keys[root] = true
		}
	}
	if v := args.Peek("count"); len(v) > 0 {
		p.Count = string(v) == "1" || string(v) == "true"
	}
	return p, nil
}

// listInstallations is GET /1.1/installations (master key): the generic object query.
func (s *Server) listInstallations(ctx *fasthttp.RequestCtx, c *Call) error {
	p, perr := ParseListParams(ctx.QueryArgs(), c.Now, nil)
	if perr != nil {
		return perr
	}
	app := c.App
	qctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	if p.Where.NeedsResolve() {
		err := p.Where.Resolve(qctx, func(ctx context.Context, sub *query.Query, visit func(query.Doc) error) error {
			return s.scanMatching(ctx, app, sub, true, func(doc map[string]any, _ []byte) error {
				return visit(query.MapDoc(doc))
			})
		})
		if err != nil {
			return listError(err, app.ID)
		}
	}

	needDoc := len(p.Order) > 0 || p.Keys != nil
	total := 0
	var page [][]byte
	var h *docHeap
	if len(p.Order) > 0 {
		h = &docHeap{order: p.Order, max: p.Skip + p.Limit}
	}
	err := s.scanMatching(qctx, app, p.Where, needDoc, func(doc map[string]any, raw []byte) error {
		total++
		if h != nil {
			if h.max == 0 {
				return nil
			}
			e := sortEntry{vals: make([]any, len(p.Order))}
			for i, k := range p.Order {
				e.vals[i] = k.Value(doc)
			}
			e.oid, _ = doc[fObjectID].(string)
			if h.Len() < h.max {
				heap.Push(h, e.detached())
			} else if h.less(e, h.items[0]) {
				h.items[0] = e.detached()
				heap.Fix(h, 0)
			}
			return nil
		}
		if total <= p.Skip {
			return nil
		}
		if len(page) < p.Limit {
			page = append(page, project(doc, raw, p.Keys))
			return nil
		}
		if !p.Count {
			total-- // not counted: we stop here
			return errStopScan
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return listError(err, app.ID)
	}
	if h != nil {
		sorted := h.items
		slices.SortFunc(sorted, func(a, b sortEntry) int {
			if h.less(a, b) {
				return -1
			}
			if h.less(b, a) {
				return 1
			}
			return 0
		})
		if p.Skip < len(sorted) {
			if page, err = s.fetchPage(qctx, app.ID, p, sorted[p.Skip:]); err != nil {
				return listError(err, app.ID)
			}
		}
	}
	out := make([]byte, 0, 64+len(page)*256)
	out = append(out, `{"results":[`...)
	for i, d := range page {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, d...)
	}
	out = append(out, ']')
	if p.Count {
		out = append(out, `,"count":`...)
		out = strconv.AppendInt(out, int64(total), 10)
	}
	out = append(out, '}')
	WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func listError(err error, appID string) error {
	if pe := asPushError(err); pe != nil {
		return pe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return push.Errorf(push.CodeTimeout, "the query took longer than %s; narrow the where", listTimeout)
	}
	return fmt.Errorf("cannot query installations of app %s: %w", appID, err)
}

// project returns the JSON of one result: raw as stored, or only the keys asked for.
func project(doc map[string]any, raw []byte, keys map[string]bool) []byte {
	if keys == nil {
		return slices.Clone(raw)
	}
	out := make(map[string]any, len(keys))
	for k := range keys {
		if v, ok := doc[k]; ok {
			out[k] = v
		}
	}
	b, _ := jsondoc.AppendMarshal(nil, out) // values came from JSON
	return b
}

// scanMatching calls fn for every installation of the app that q matches, reading the
// narrowest source the query's hints allow: point lookups by id, one channel's index, or
// every bucket (filtered by deviceType when pinned). doc is nil unless decode or the query
// needs it; raw aliases store memory and is valid only during fn.
func (s *Server) scanMatching(ctx context.Context, app *push.App, q *query.Query, decode bool, fn func(doc map[string]any, raw []byte) error) error {
	needMatch := !q.MatchesAll() || q.NeedsResolve()
	decode = decode || needMatch
	visit := func(raw []byte) error {
		var doc map[string]any
		if decode {
			var err error
			if doc, err = jsondoc.DecodeObject(raw); err != nil {
				return fmt.Errorf("cannot decode a stored installation: %w", err)
			}
			if needMatch && !q.Match(query.MapDoc(doc)) {
				return nil
			}
		}
		return fn(doc, raw)
	}
	hints := q.Hints()
	st := s.deps.Installations
	if ids, kind, ok := pointHint(hints); ok {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			oid := id
			if kind != "" {
				// The index holds ids as stored (iOS tokens and installationIds lower-cased
				// on write, other tokens as sent) and Match compares exactly, so the id is
				// looked up as queried: another case could only find a document Match refuses.
				found, err := st.LookupDevice(ctx, app.ID, kind, id)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				oid = found
			}
			if seen[oid] || len(oid) > maxObjectIDLen {
				continue
			}
			seen[oid] = true
			inst, err := st.GetInstallation(ctx, app.ID, oid)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if err := visit(inst.Doc); err != nil {
				return err
			}
		}
		return nil
	}
	r := store.ScanRange{AppID: app.ID, DeviceType: hints.DeviceType}
	if len(hints.Channels) > 0 {
		r.Channel = hints.Channels[0]
	}
	for b := 0; b < app.Settings.Buckets; b++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.Bucket = b
		err := st.Scan(ctx, r, func(row *store.Row) error { return visit(row.Doc) })
		if err != nil {
			return err
		}
	}
	return nil
}

// pointHint picks the id list of the hints, if any: objectIds first (kind ""), then
// installationIds, deviceTokens, registrationIds.
func pointHint(h query.Hints) ([]string, push.IDKind, bool) {
	switch {
	case h.ObjectIDs != nil:
		return h.ObjectIDs, "", true
	case h.InstallationIDs != nil:
		return h.InstallationIDs, push.KindIID, true
	case h.DeviceTokens != nil:
		return h.DeviceTokens, push.KindToken, true
	case h.RegistrationIDs != nil:
		return h.RegistrationIDs, push.KindRegID, true
	}
	return nil, "", false
}

// sortEntry is what an ordered query keeps of a match while it scans: the order values and
// the objectId, about a hundred bytes, so that skip+limit entries (up to 11,000) stay small
// whatever the documents' size. The page's documents are read again at the end (fetchPage).
type sortEntry struct {
	vals []any
	oid  string
}

// detached is e with its strings copied out of the decoded document, which shares one copy
// of the document's bytes among all its strings (jsondoc.Decode): keeping one would keep it.
func (e sortEntry) detached() sortEntry {
	for i, v := range e.vals {
		e.vals[i] = detach(v)
	}
	e.oid = strings.Clone(e.oid)
	return e
}

func detach(v any) any {
	switch v := v.(type) {
	case string:
		return strings.Clone(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = detach(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[strings.Clone(k)] = detach(x)
		}
		return out
	}
	return v
}

// fetchPage reads the documents of an ordered query's page by objectId, in order. One deleted
// since the scan, or changed so that the where no longer matches it, is left out.
func (s *Server) fetchPage(ctx context.Context, appID string, p *ListParams, entries []sortEntry) ([][]byte, error) {
	page := make([][]byte, 0, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		inst, err := s.deps.Installations.GetInstallation(ctx, appID, e.oid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read installation %s: %w", e.oid, err)
		}
		doc, err := jsondoc.DecodeObject(inst.Doc)
		if err != nil {
			return nil, fmt.Errorf("cannot decode installation %s: %w", e.oid, err)
		}
		if !p.Where.MatchesAll() && !p.Where.Match(query.MapDoc(doc)) {
			continue
		}
		page = append(page, project(doc, inst.Doc, p.Keys))
	}
	return page, nil
}

// docHeap keeps the best max entries of an ordered query; its root is the worst kept.
type docHeap struct {
	order []OrderKey
	max   int
	items []sortEntry
}

// less reports whether a sorts before b: by the order keys, then by objectId.
func (h *docHeap) less(a, b sortEntry) bool {
	for i, k := range h.order {
		if c := k.Compare(a.vals[i], b.vals[i]); c != 0 {
			return c < 0
		}
	}
	return a.oid < b.oid
}

func (h *docHeap) Len() int           { return len(h.items) }
func (h *docHeap) Less(i, j int) bool { return h.less(h.items[j], h.items[i]) } // max-heap: worst on top
func (h *docHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *docHeap) Push(x any)         { h.items = append(h.items, x.(sortEntry)) }
func (h *docHeap) Pop() any {
	n := len(h.items)
	x := h.items[n-1]
	h.items = h.items[:n-1]
	return x
}
