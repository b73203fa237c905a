package migrate

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/pushd/pushd/push"
)

// maxBSONDoc is MongoDB's document size limit.
const maxBSONDoc = 16 << 20

// readBSON reads a mongodump collection file: BSON documents back to back.
func readBSON(ctx context.Context, l *Loader, br *bufio.Reader) error {
	var lenBuf [4]byte
	buf := make([]byte, 0, 4096)
	for n := 1; ; n++ {
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("cannot read BSON document %d: %w", n, err)
		}
		size := int(binary.LittleEndian.Uint32(lenBuf[:]))
		if size < 5 || size > maxBSONDoc {
			return fmt.Errorf("cannot read BSON document %d: its length %d is not a BSON document's", n, size)
		}
		buf = append(buf[:0], lenBuf[:]...)
		buf = append(buf, make([]byte, size-4)...)
		if _, err := io.ReadFull(br, buf[4:]); err != nil {
			return fmt.Errorf("cannot read BSON document %d: %w", n, err)
		}
		var doc bson.D
		if err := bson.Unmarshal(buf, &doc); err != nil {
			l.Refuse(n, errRow("not a valid BSON document: %v", err))
			continue
		}
		obj, perr := fromBSON(doc)
		if perr != nil {
			l.Refuse(n, perr)
			continue
		}
		if err := l.Add(ctx, n, obj); err != nil {
			return err
		}
	}
}

// fromBSON turns a stored document into the object the REST API shows: _id is objectId; the
// dates of createdAt and updatedAt become ISO strings, other dates {"__type":"Date"}; Parse's
// storage fields (_created_at, _updated_at, _p_<field> pointers, _acl) take their REST form;
// other fields starting with '_' are the storage's own (_rperm, _wperm, hashes) and are dropped.
func fromBSON(doc bson.D) (map[string]any, *push.Error) {
	obj := make(map[string]any, len(doc))
	for _, e := range doc {
		switch k := e.Key; {
		case k == "_id":
			switch id := e.Value.(type) {
			case bson.ObjectID:
				obj["objectId"] = id.Hex()
			case string:
				obj["objectId"] = id
			default:
				return nil, errRow("_id is a %T, not an ObjectId or a string", e.Value)
			}
		case k == "createdAt" || k == "updatedAt" || k == "_created_at" || k == "_updated_at":
			name := strings.TrimPrefix(k, "_")
			name = strings.Replace(name, "_at", "At", 1)
			switch t := e.Value.(type) {
			case bson.DateTime:
				obj[name] = push.FormatTime(t.Time().UTC())
			case time.Time:
				obj[name] = push.FormatTime(t.UTC())
			default:
				v, perr := restValue(e.Value, 0)
				if perr != nil {
					return nil, perr
				}
				obj[name] = v
			}
		case strings.HasPrefix(k, "_p_"):
			s, ok := e.Value.(string)
			class, id, found := strings.Cut(s, "$")
			if !ok || !found {
				return nil, errRow("pointer %s is not \"Class$objectId\"", k)
			}
			obj[k[3:]] = map[string]any{"__type": "Pointer", "className": class, "objectId": id}
		case k == "_acl":
			v, perr := parseACL(e.Value)
			if perr != nil {
				return nil, perr
			}
			obj["ACL"] = v
		case strings.HasPrefix(k, "_"):
			// the storage's own fields: not part of the object
		default:
			v, perr := restValue(e.Value, 0)
			if perr != nil {
				return nil, perr
			}
			obj[k] = v
		}
	}
	return obj, nil
}

// parseACL turns Parse's stored _acl ({"*":{"r":true,"w":true}}) into the REST form.
func parseACL(v any) (any, *push.Error) {
	d, ok := v.(bson.D)
	if !ok {
		return restValue(v, 0)
	}
	out := make(map[string]any, len(d))
	for _, e := range d {
		perms, ok := e.Value.(bson.D)
		if !ok {
			return nil, errRow("_acl entry %q is not an object", e.Key)
		}
		p := map[string]any{}
		for _, pe := range perms {
			switch pe.Key {
			case "r", "read":
				p["read"] = pe.Value
			case "w", "write":
				p["write"] = pe.Value
			}
		}
		out[e.Key] = p
	}
	return out, nil
}

// maxBSONDepth bounds the nesting converted (the API's own bound applies after).
const maxBSONDepth = 64

// restValue converts a BSON value into its JSON form as the REST API shows it.
func restValue(v any, depth int) (any, *push.Error) {
	if depth > maxBSONDepth {
		return nil, errRow("the document nests deeper than %d levels", maxBSONDepth)
	}
	switch x := v.(type) {
	case nil, string, bool, float64:
		return x, nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case bson.ObjectID:
		return x.Hex(), nil
	case bson.DateTime:
		return map[string]any{"__type": "Date", "iso": push.FormatTime(x.Time().UTC())}, nil
	case bson.Timestamp:
		return map[string]any{"__type": "Date", "iso": push.FormatTime(time.Unix(int64(x.T), 0).UTC())}, nil
	case bson.Binary:
		return map[string]any{"__type": "Bytes", "base64": base64.StdEncoding.EncodeToString(x.Data)}, nil
	case bson.Decimal128:
		return x.String(), nil
	case bson.A:
		out := make([]any, len(x))
		for i, e := range x {
			c, perr := restValue(e, depth+1)
			if perr != nil {
				return nil, perr
			}
			out[i] = c
		}
		return out, nil
	case bson.D:
		// A DBRef ({$ref, $id}) is a pointer.
		if len(x) >= 2 && x[0].Key == "$ref" && x[1].Key == "$id" {
			class, _ := x[0].Value.(string)
			id, perr := restValue(x[1].Value, depth+1)
			if perr != nil {
				return nil, perr
			}
			return map[string]any{"__type": "Pointer", "className": class, "objectId": id}, nil
		}
		out := make(map[string]any, len(x))
		for _, e := range x {
			c, perr := restValue(e.Value, depth+1)
			if perr != nil {
				return nil, perr
			}
			out[e.Key] = c
		}
		return out, nil
	}
	return nil, errRow("a value of BSON type %T has no JSON form here", v)
}
