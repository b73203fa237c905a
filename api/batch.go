package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
)

// The original's batch endpoints, as far as its SDKs use them for installations:
//
//   - POST /1.1/batch {"requests":[{method, path, body?, params?}, ...]} answers an array with
//     one {"success": <answer>} or {"error": {code, error}} per request, in order. The
//     JavaScript SDK sends a query whose URL would be long as one GET in it
//     (query.js, _createRequest) and saveAll/destroyAll through it.
//   - POST /1.1/batch/save, same body, answers one object keyed by each request's
//     body.__internalId (else the objectId of its answer) holding the merged answers. The
//     Objective-C SDK saves every object through it (LCObject.m, sendBatchRequest); its
//     installation saves all become POST /1.1/installations (LCInstallation.m).
//
// Each request runs through the same routing, authentication (the batch's own headers) and
// handler as a request of its own, so it answers exactly as it would alone. Only the
// installation paths may be batched: other classes are not pushd's, and a push or a batch
// inside a batch would dodge the push intake's admission order.
const (
	routeBatch     = "batch"
	batchMaxBody   = 256 << 10 // the server-wide cap: room for maxBatchOps installation bodies
	maxBatchOps    = 50        // Parse's limit; the original documents none for these endpoints
	internalIDKey  = "__internalId"
	childrenKey    = "__children"
	batchPathInst  = "/1.1/installations"
	batchPathClass = "/1.1/classes/_Installation"
)

func (s *Server) registerBatch() {
	s.Register(Route{Method: "POST", Path: "/1.1/batch", Name: routeBatch, Auth: AuthApp, JSONBody: true, MaxBody: batchMaxBody}, s.batch)
	s.Register(Route{Method: "POST", Path: "/1.1/batch/save", Name: routeBatch, Auth: AuthApp, JSONBody: true, MaxBody: batchMaxBody}, s.batchSave)
}

// batchOp is one request of a batch.
type batchOp struct {
	Method string                     `json:"method"`
	Path   string                     `json:"path"`
	Body   map[string]json.RawMessage `json:"body"`
	Params map[string]json.RawMessage `json:"params"`
}

// batchResult is one request's answer.
type batchResult struct {
	status     int
	body       []byte
	internalID string
}

func (r *batchResult) ok() bool { return r.status >= 200 && r.status < 300 }

// decodeBatch reads a batch body: {"requests": [...]}, at most maxBatchOps, each with a
// method and a path.
func decodeBatch(body []byte) ([]batchOp, *push.Error) {
	if _, perr := decodeObject(body); perr != nil {
		return nil, perr
	}
	var b struct {
		Requests []batchOp `json:"requests"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, push.Errorf(push.CodeInvalidType, "requests must be an array of {method, path, body, params} objects")
	}
	switch {
	case b.Requests == nil:
		return nil, push.Errorf(push.CodeMissingRequired, "requests is required")
	case len(b.Requests) > maxBatchOps:
		return nil, push.Errorf(push.CodeValidation, "a batch may hold at most %d requests", maxBatchOps)
	}
	for i, op := range b.Requests {
		if op.Method == "" || op.Path == "" {
			return nil, push.Errorf(push.CodeMissingRequired, "requests[%d] needs a method and a path", i)
		}
	}
	return b.Requests, nil
}

// batchable says whether path names an installation route (with its version prefix, as the
// SDKs write it).
func batchable(path string) bool {
	for _, p := range []string{batchPathInst, batchPathClass} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// runBatchOp runs one request of a batch as a request of its own, with the batch's headers.
func (s *Server) runBatchOp(ctx *fasthttp.RequestCtx, op *batchOp) batchResult {
	res := batchResult{}
	if id, ok := op.Body[internalIDKey]; ok {
		_ = json.Unmarshal(id, &res.internalID)
	}
	path, _, _ := strings.Cut(op.Path, "?")
	// AV.Object.destroyAll (JavaScript SDK, object.js) deletes a class's objects as one
	// DELETE of their comma-joined ids: one request per id here, the first failure answering
	// for the group.
	if dir, ids, ok := strings.Cut(path, ","); ok && strings.EqualFold(op.Method, "DELETE") && batchable(dir) {
		i := strings.LastIndexByte(dir, '/')
		all := append([]string{dir[i+1:]}, strings.Split(ids, ",")...)
		if len(all) > maxBatchOps {
			perr := push.Errorf(push.CodeValidation, "a batch delete may name at most %d objects", maxBatchOps)
			res.status, res.body = fasthttp.StatusBadRequest, errorBody(perr)
			return res
		}
		for _, id := range all {
			one := batchOp{Method: op.Method, Path: dir[:i+1] + id, Params: op.Params}
			if r := s.runBatchOp(ctx, &one); !r.ok() {
				return r
			}
		}
		res.status, res.body = fasthttp.StatusOK, []byte("{}")
		return res
	}
	if !batchable(path) {
		perr := push.Errorf(push.CodeNotFoundRoute, "%s %s cannot be batched: only %s and %s requests can", clipID(op.Method), clipID(path), batchPathInst, batchPathClass)
		res.status, res.body = fasthttp.StatusNotFound, errorBody(perr)
		return res
	}
	var req fasthttp.Request
	ctx.Request.Header.CopyTo(&req.Header)
	req.Header.SetMethod(strings.ToUpper(op.Method))
	q := url.Values{}
	for k, v := range op.Params {
		var str string
		if json.Unmarshal(v, &str) != nil {
			str = string(bytes.TrimSpace(v)) // objects (a where), numbers, booleans: their JSON text
		}
		q.Set(k, str)
	}
	uri := path
	if len(q) > 0 {
		uri += "?" + q.Encode()
	}
	req.SetRequestURI(uri)
	req.Header.SetContentType("application/json")
	if op.Body != nil {
		delete(op.Body, internalIDKey)
		delete(op.Body, childrenKey)
		b, _ := json.Marshal(op.Body)
		req.SetBody(b)
	} else {
		req.SetBody(nil)
	}
	var sub fasthttp.RequestCtx
	sub.Init(&req, ctx.RemoteAddr(), nil)
	s.serve(&sub)
	res.status = sub.Response.StatusCode()
	res.body = append([]byte(nil), sub.Response.Body()...)
	return res
}

// errorBody is the {code, error} JSON of perr.
func errorBody(perr *push.Error) []byte {
	b, _ := json.Marshal(struct {
		Code  int    `json:"code"`
		Error string `json:"error"`
	}{int(perr.Code), perr.Message})
	return b
}

// batch is POST /1.1/batch.
func (s *Server) batch(ctx *fasthttp.RequestCtx, _ *Call) error {
	ops, perr := decodeBatch(ctx.PostBody())
	if perr != nil {
		return perr
	}
	out := make([]json.RawMessage, len(ops))
	for i := range ops {
		r := s.runBatchOp(ctx, &ops[i])
		key := "error"
		if r.ok() {
			key = "success"
		}
		out[i], _ = json.Marshal(map[string]json.RawMessage{key: r.body})
	}
	b, _ := json.Marshal(out)
	ctx.Response.Header.Del("Location")
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

// batchSave is POST /1.1/batch/save. It stops at the first request that fails and answers
// that request's error (the requests before it stay done, as they would one by one).
func (s *Server) batchSave(ctx *fasthttp.RequestCtx, _ *Call) error {
	ops, perr := decodeBatch(ctx.PostBody())
	if perr != nil {
		return perr
	}
	out := map[string]map[string]json.RawMessage{}
	for i := range ops {
		r := s.runBatchOp(ctx, &ops[i])
		if !r.ok() {
			ctx.Response.Header.Del("Location")
			WriteJSON(ctx, r.status, r.body)
			return nil
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &fields); err != nil {
			fields = map[string]json.RawMessage{}
		}
		key := r.internalID
		if key == "" {
			_ = json.Unmarshal(fields[fObjectID], &key)
		}
		if out[key] == nil {
			out[key] = map[string]json.RawMessage{}
		}
		for k, v := range fields {
			out[key][k] = v
		}
	}
	b, _ := json.Marshal(out)
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}
