package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
)

// Built-in installation fields.
const (
	fObjectID       = "objectId"
	fCreatedAt      = "createdAt"
	fUpdatedAt      = "updatedAt"
	fDeviceType     = "deviceType"
	fDeviceToken    = "deviceToken"
	fInstallationID = "installationId"
	fRegistrationID = "registrationId"
	fVendor         = "vendor"
	fDeviceProfile  = "deviceProfile"
	fAPNsTopic      = "apnsTopic"
	fAPNsTeamID     = "apnsTeamId"
	fChannels       = "channels"
	fValid          = "valid"
	fBadge          = "badge"
	fTimeZone       = "timeZone"
)

var readOnlyFields = map[string]bool{fObjectID: true, fCreatedAt: true, fUpdatedAt: true}

var stringFields = []string{fDeviceType, fDeviceToken, fInstallationID, fRegistrationID, fVendor, fDeviceProfile, fAPNsTopic, fAPNsTeamID, fTimeZone}

// typedFields are the built-in fields whose values have a type: a null there is an absent
// field (validateDoc).
var typedFields = append([]string{fChannels, fValid, fBadge}, stringFields...)

// Field and value limits.
const (
	maxFieldName   = 128                    // longest field name
	maxChannelLen  = 256                    // longest channel name, in bytes
	maxChannels    = 1000                   // channels of one installation (FCM allows 2,000 topics per device)
	maxDocBytes    = 32 << 10               // a stored installation document: twice a body, so PUTs cannot grow it without bound
	maxIDLen       = 256                    // longest installationId / registrationId
	minTokenHex    = 64                     // APNs tokens are 32 bytes today (64 hex digits) ...
	maxTokenHex    = 200                    // ... Apple allows them to grow, up to 100 bytes
	maxNestedDepth = jsondoc.StrictMaxDepth // nesting of custom values (the strict-JSON check enforces it first)
)

// checkFieldName applies the storage interface's column-name rules: no '$' or '.' (121);
// a letter first, then letters, digits, underscores (105).
func checkFieldName(name string) *push.Error {
	if strings.ContainsAny(name, "$.") {
		return push.Errorf(push.CodeInvalidKeyChar, "field name %q may not contain '$' or '.'", name)
	}
	if name == "" || len(name) > maxFieldName {
		return push.Errorf(push.CodeInvalidKeyName, "invalid field name %q: 1 to %d characters", name, maxFieldName)
	}
	for i, r := range name {
		ok := r < 0x80 && (unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || r == '_')))
		if !ok {
			return push.Errorf(push.CodeInvalidKeyName, "invalid field name %q: must start with a letter and contain only letters, digits and '_'", name)
		}
	}
	return nil
}

// normalizeDate checks a {"__type":"Date","iso":...} value, as Parse does (111 "not a valid
// Date" otherwise), and rewrites its iso in the API's form (UTC, milliseconds), as Parse
// returns a stored Date.
func normalizeDate(field string, d map[string]any) *push.Error {
	iso, _ := d["iso"].(string)
	t, ok := query.ParseISO(iso)
	if !ok || len(d) != 2 {
		return push.Errorf(push.CodeInvalidType, "field %q is not a valid Date: want {\"__type\":\"Date\",\"iso\":\"YYYY-MM-DDTHH:MM:SS[.sss][Z|±HH:MM]\"}", field)
	}
	d["iso"] = push.FormatTime(t)
	return nil
}

// checkNestedKeys rejects '$' and '.' in the keys of nested objects (121) and bounds depth.
func checkNestedKeys(field string, v any, depth int) *push.Error {
	if depth > maxNestedDepth {
		return push.Errorf(push.CodeInvalidType, "field %q nests deeper than %d levels", field, maxNestedDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		if x["__type"] == "Date" {
			return normalizeDate(field, x)
		}
		for k, e := range x {
			if strings.ContainsAny(k, "$.") {
				return push.Errorf(push.CodeInvalidKeyChar, "key %q inside field %q may not contain '$' or '.'", k, field)
			}
			if err := checkNestedKeys(field, e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkNestedKeys(field, e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidChannel reports whether a channel name uses only the spec's charset: letters, digits,
// '_', '-', '=' and CJK unified ideographs; non-empty, at most 256 bytes.
func ValidChannel(c string) bool {
	return c != "" && len(c) <= maxChannelLen && push.ChannelNameChars(c)
}

// CanonicalToken lower-cases an APNs token and reports whether it is hex of 64 to 200 digits
// (even length). Lookups by deviceToken must use the canonical form.
func CanonicalToken(t string) (string, bool) {
	if len(t) < minTokenHex || len(t) > maxTokenHex || len(t)%2 != 0 {
		return "", false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
			return "", false
		}
	}
	return strings.ToLower(t), true
}

// CanonicalInstallationID lower-cases an installationId (iOS SDKs send upper-case UUIDs;
// Parse lower-cases them too) and reports whether it is 1 to 256 printable ASCII characters
// without spaces.
func CanonicalInstallationID(id string) (string, bool) {
	if id == "" || len(id) > maxIDLen {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return "", false
		}
	}
	return strings.ToLower(id), true
}

// decodeObject parses a request body that must be a strict JSON object (jsondoc.CheckStrict):
// installation and admin bodies.
func decodeObject(body []byte) (map[string]any, *push.Error) {
	v, err := jsondoc.Decode(body)
	if err != nil {
		return nil, push.Errorf(push.CodeInvalidJSON, "a JSON dictionary is expected: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errNotJSONObject
	}
	// JSON that encoding/json reads but readers disagree on (duplicate keys, broken strings),
	// nests too deep or names a prototype key; the push endpoints share this rule (api/wire).
	if err := jsondoc.CheckStrict(body, jsondoc.StrictMaxDepth); err != nil {
		return nil, push.Errorf(push.CodeInvalidJSON, "malformed JSON: %v", err)
	}
	return m, nil
}

// checkBodyFields checks the names of a create/update body: valid names, nothing read-only.
func checkBodyFields(body map[string]any) *push.Error {
	for k, v := range body {
		if err := checkFieldName(k); err != nil {
			return err
		}
		if readOnlyFields[k] {
			return push.Errorf(push.CodeReadOnlyKey, "field %q is read-only", k)
		}
		if op, ok := v.(map[string]any); ok {
			if _, isOp := op["__op"]; isOp {
				continue
			}
		}
		if err := checkNestedKeys(k, v, 0); err != nil {
			return err
		}
	}
	return nil
}

// applyBody applies a create/update body to doc: plain values replace, {"__op": ...} values
// operate (Add, AddUnique, Remove, Increment, Delete).
func applyBody(doc, body map[string]any) *push.Error {
	for k, v := range body {
		op, ok := v.(map[string]any)
		if !ok {
			doc[k] = v
			continue
		}
		name, isOp := op["__op"]
		if !isOp {
			doc[k] = v
			continue
		}
		if err := applyOp(doc, k, name, op); err != nil {
			return err
		}
	}
	return nil
}

func applyOp(doc map[string]any, field string, name any, op map[string]any) *push.Error {
	switch name {
	case "Delete":
		delete(doc, field)
		return nil
	case "Increment":
		amount, ok := op["amount"].(float64)
		if !ok {
			return push.Errorf(push.CodeInvalidType, "Increment of %q needs a numeric amount", field)
		}
		cur, exists := doc[field]
		if !exists || cur == nil {
			doc[field] = amount
			return nil
		}
		n, ok := cur.(float64)
		if !ok {
			return push.Errorf(push.CodeInvalidType, "cannot Increment %q: it is not a number", field)
		}
		if sum := n + amount; !math.IsInf(sum, 0) {
			doc[field] = sum
			return nil
		}
		return push.Errorf(push.CodeInvalidType, "Increment of %q overflows", field)
	case "Add", "AddUnique", "Remove":
		objs, ok := op["objects"].([]any)
		if !ok {
			return push.Errorf(push.CodeInvalidType, "%s on %q needs an objects array", name, field)
		}
		for _, o := range objs {
			if err := checkNestedKeys(field, o, 1); err != nil {
				return err
			}
		}
		var cur []any
		if v, exists := doc[field]; exists && v != nil {
			arr, ok := v.([]any)
			if !ok {
				return push.Errorf(push.CodeInvalidType, "cannot %s to %q: it is not an array", name, field)
			}
			cur = arr
		}
		switch name {
		case "Add":
			cur = append(append([]any{}, cur...), objs...)
		case "AddUnique":
			out := append([]any{}, cur...)
			for _, o := range objs {
				if !containsValue(out, o) {
					out = append(out, o)
				}
			}
			cur = out
		case "Remove":
			out := make([]any, 0, len(cur))
			for _, c := range cur {
				if !containsValue(objs, c) {
					out = append(out, c)
				}
			}
			cur = out
		}
		doc[field] = cur
		return nil
	}
	return push.Errorf(push.CodeInvalidType, "unknown __op %v on %q: want Add, AddUnique, Remove, Increment or Delete", name, field)
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}
	return false
}

// validateDoc checks the built-in fields of a complete document, drops those that are null,
// and canonicalises the device ids in place.
func validateDoc(doc map[string]any) *push.Error {
	// A null built-in field is an absent one, as a null parameter is everywhere in this API:
	// {"vendor":null} removes vendor as {"__op":"Delete"} does, and a required field that is
	// null is missing. Parse clients read a null and a missing field alike.
	for _, f := range typedFields {
		if v, ok := doc[f]; ok && v == nil {
			delete(doc, f)
		}
	}
	for _, f := range stringFields {
		if v, ok := doc[f]; ok {
			if _, isStr := v.(string); !isStr {
				return push.Errorf(push.CodeInvalidType, "field %q must be a string", f)
			}
		}
	}
	dt, ok := doc[fDeviceType].(string)
	if !ok || dt == "" {
		return push.Errorf(push.CodeMissingRequired, "deviceType is required")
	}
	if dt != push.DeviceIOS && dt != push.DeviceAndroid {
		return push.Errorf(push.CodeValidation, "deviceType must be ios or android, not %q", dt)
	}
	if dt == push.DeviceIOS {
		tok, _ := doc[fDeviceToken].(string)
		if tok == "" {
			return push.Errorf(push.CodeMissingRequired, "deviceToken is required for deviceType ios")
		}
		c, valid := CanonicalToken(tok)
		if !valid {
			return push.Errorf(push.CodeInvalidToken, "invalid iOS deviceToken: want 64 to 200 hex digits")
		}
		doc[fDeviceToken] = c
	}
	if iid, ok := doc[fInstallationID].(string); ok {
		c, valid := CanonicalInstallationID(iid)
		if !valid {
			if iid == "" && dt == push.DeviceAndroid {
				return push.Errorf(push.CodeMissingRequired, "installationId is required for deviceType android")
			}
			return push.Errorf(push.CodeValidation, "invalid installationId: want 1 to %d printable characters without spaces", maxIDLen)
		}
		doc[fInstallationID] = c
	} else if dt == push.DeviceAndroid {
		return push.Errorf(push.CodeMissingRequired, "installationId is required for deviceType android")
	}
	if rid, ok := doc[fRegistrationID].(string); ok && !validRegistrationID(rid) {
		return push.Errorf(push.CodeValidation, "invalid registrationId: want 1 to 4096 characters without spaces, control characters, ',' or ';'")
	}
	if p, ok := doc[fDeviceProfile].(string); ok && !push.ValidProfile(p) {
		return push.Errorf(push.CodeValidation, "invalid deviceProfile %q: empty, or a letter followed by letters, digits and '_'", p)
	}
	if v, ok := doc[fChannels]; ok {
		arr, ok := v.([]any)
		if !ok {
			return push.Errorf(push.CodeInvalidType, "channels must be an array of strings")
		}
		if len(arr) > maxChannels {
			return push.Errorf(push.CodeValidation, "an installation may have at most %d channels, not %d", maxChannels, len(arr))
		}
		for _, e := range arr {
			c, ok := e.(string)
			if !ok {
				return push.Errorf(push.CodeInvalidType, "channels must be an array of strings")
			}
			if !ValidChannel(c) {
				return push.Errorf(push.CodeInvalidChannel, "invalid channel name %q: use 1 to %d bytes of letters, digits, '_', '-', '=' and CJK unified ideographs", c, maxChannelLen)
			}
		}
	}
	if v, ok := doc[fValid]; ok {
		if _, isBool := v.(bool); !isBool {
			return push.Errorf(push.CodeInvalidType, "field %q must be a boolean", fValid)
		}
	}
	if v, ok := doc[fBadge]; ok {
		if _, isNum := v.(float64); !isNum {
			return push.Errorf(push.CodeInvalidType, "field %q must be a number", fBadge)
		}
	}
	return nil
}

// routeOf derives the compact routing fields from a validated document.
func routeOf(objectID string, doc map[string]any, updatedAt time.Time) push.Route {
	str := func(f string) string { s, _ := doc[f].(string); return s }
	r := push.Route{
		ObjectID:       objectID,
		DeviceType:     str(fDeviceType),
		DeviceToken:    str(fDeviceToken),
		InstallationID: str(fInstallationID),
		RegistrationID: str(fRegistrationID),
		Vendor:         str(fVendor),
		DeviceProfile:  str(fDeviceProfile),
		APNsTopic:      str(fAPNsTopic),
		APNsTeamID:     str(fAPNsTeamID),
		UpdatedAt:      updatedAt.UnixMilli(),
	}
	if v, ok := doc[fValid].(bool); ok && !v {
		r.Invalid = true
	}
	if arr, ok := doc[fChannels].([]any); ok && len(arr) > 0 {
		r.Channels = make([]string, 0, len(arr))
		seen := make(map[string]bool, len(arr))
		for _, e := range arr {
			c := e.(string) // validated
			if !seen[c] {
				seen[c] = true
				r.Channels = append(r.Channels, c)
			}
		}
	}
	return r
}

// deviceIDs lists the unique device ids of a document: (kind, id) pairs in lookup priority
// order (installationId wins, as in Parse).
// buildInstallation stamps the read-only fields into doc and encodes it.
func buildInstallation(objectID string, doc map[string]any, createdAt, updatedAt time.Time) (push.Installation, error) {
	doc[fObjectID] = objectID
	doc[fCreatedAt] = push.FormatTime(createdAt)
	doc[fUpdatedAt] = push.FormatTime(updatedAt)
	b, err := jsondoc.AppendMarshal(make([]byte, 0, 512), doc) // most documents fit: one allocation
	if err != nil {
		return push.Installation{}, fmt.Errorf("cannot encode installation %s: %w", objectID, err)
	}
	if len(b) > maxDocBytes {
		return push.Installation{}, push.Errorf(push.CodeObjectTooLarge,
			"the installation would be %d bytes once stored; at most %d are allowed", len(b), maxDocBytes)
	}
	return push.Installation{Route: routeOf(objectID, doc, updatedAt), CreatedAt: createdAt.UnixMilli(), Doc: b}, nil
}

// newObjectID returns 24 random lowercase hex digits, the shape of the original service's ids.
func newObjectID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// validRegistrationID accepts a vendor registration id: 1 to 4096 bytes without spaces,
// control characters, ',' or ';'. No vendor's id holds them, and Xiaomi and Meizu join
// regIds with ',' (OPPO's broadcast lists with ';') in one request: such an id could address
// another device (docs/decisions.md, "registrationId characters").
func validRegistrationID(rid string) bool {
	if rid == "" || len(rid) > 4096 {
		return false
	}
	for i := 0; i < len(rid); i++ {
		if c := rid[i]; c <= ' ' || c == 0x7f || c == ',' || c == ';' {
			return false
		}
	}
	return true
}
