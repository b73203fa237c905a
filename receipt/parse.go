package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
)

// Kind is what a receipt says of one device.
type Kind uint8

const (
	Arrived Kind = iota + 1 // the message reached the device
	Dead                    // the app is uninstalled or the token invalid: DROP
	Other                   // any other status (notifications off, inactive device, ...): counted, nothing done
)

// Entry is one device of one receipt.
type Entry struct {
	PushID         string // the push record's objectId (from Param)
	NotificationID string
	DeviceID       string // the regId / token / pushId
	Kind           Kind
	Status         string    // the vendor's status, for logs and the reason of a Dead entry
	At             time.Time // when the vendor says it happened; zero: unknown
}

// maxEntries bounds the entries of one request (HMS sends at most 1,000 statuses, Xiaomi and
// OPPO list regIds comma-joined): a larger body is refused.
const maxEntries = 10_000

// parse reads a receipt body of vendor. Errors say what is wrong, never echo the body.
func parse(vendor string, body []byte) ([]Entry, error) {
	var (
		es  []Entry
		err error
	)
	switch vendor {
	case push.ChannelMi:
		es, err = parseMi(body)
	case push.ChannelHMS, push.ChannelHonor:
		es, err = parseHMS(body)
	case push.ChannelVivo:
		es, err = parseVivo(body)
	case push.ChannelOppo:
		es, err = parseOppo(body)
	case push.ChannelMz:
		es, err = parseMz(body)
	default:
		return nil, fmt.Errorf("vendor %q sends no receipts", vendor)
	}
	if err != nil {
		return nil, err
	}
	if len(es) > maxEntries {
		return nil, fmt.Errorf("the receipt holds more than %d devices", maxEntries)
	}
	return es, nil
}

// formField reads field of a form-encoded body, or the body itself when it is JSON (a vendor
// whose receipt is documented as a form field may post the JSON alone).
func formField(body []byte, field string) ([]byte, error) {
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '{' {
		return b, nil
	}
	f, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errors.New("the receipt is neither a form nor JSON")
	}
	v := f.Get(field)
	if v == "" {
		return nil, fmt.Errorf("the receipt has no %s field", field)
	}
	return []byte(v), nil
}

// msgReceipt is one message's receipt in the Xiaomi and Meizu shape: keyed by the vendor's
// message id, {param, type, targets}; targets are comma-joined (Xiaomi) or a list (Meizu).
type msgReceipt struct {
	Param     string          `json:"param"`
	Type      json.Number     `json:"type"`
	Targets   json.RawMessage `json:"targets"`
	Timestamp json.Number     `json:"timestamp"`
}

func (m *msgReceipt) targets() ([]string, error) {
	var s string
	if err := json.Unmarshal(m.Targets, &s); err == nil {
		return splitIDs(s), nil
	}
	var l []string
	if err := json.Unmarshal(m.Targets, &l); err != nil {
		return nil, errors.New("targets is neither a string nor a list of strings")
	}
	return l, nil
}

func splitIDs(s string) []string {
	var out []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func parseMsgReceipts(data []byte, kind func(typ int) Kind) ([]Entry, error) {
	var m map[string]msgReceipt
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, errors.New("the receipt is not a JSON object of message receipts")
	}
	var out []Entry
	for _, r := range m {
		pid, nid, ok := parseParam(r.Param)
		if !ok {
			continue // not a push of pushd's (another sender's, or a console push)
		}
		typ := 0 // vivo's receipts have no type
		if r.Type != "" {
			var err error
			if typ, err = strconv.Atoi(r.Type.String()); err != nil {
				return nil, errors.New("a receipt type is not a number")
			}
		}
		ids, err := r.targets()
		if err != nil {
			return nil, err
		}
		var at time.Time
		if ms, err := r.Timestamp.Int64(); err == nil && ms > 0 {
			at = time.UnixMilli(ms)
		}
		k := kind(typ)
		for _, id := range ids {
			out = append(out, Entry{PushID: pid, NotificationID: nid, DeviceID: id, Kind: k, Status: "type " + r.Type.String(), At: at})
		}
		if len(out) > maxEntries {
			break
		}
	}
	return out, nil
}

// parseMi reads Xiaomi's receipt: form field data = {"<msgId>": {"param", "type",
// "targets" (comma-joined regIds), "timestamp"}} [unconfirmed: gateways.md §9]. type 1
// delivered, 16 invalid targets (Xiaomi's replacement of the retired invalid-regId feedback).
func parseMi(body []byte) ([]Entry, error) {
	data, err := formField(body, "data")
	if err != nil {
		return nil, err
	}
	return parseMsgReceipts(data, func(typ int) Kind {
		switch typ {
		case 1, 3:
			return Arrived
		case 16:
			return Dead
		}
		return Other
	})
}

// parseMz reads Meizu's receipt: form field cb = {"<msgId>": {"param", "type", "targets"
// (a list of pushIds)}} [unconfirmed]. type 1 delivered (3 delivered and clicked); Meizu reports
// dead pushIds in the send reply (110002/110003), not in receipts.
func parseMz(body []byte) ([]Entry, error) {
	data, err := formField(body, "cb")
	if err != nil {
		return nil, err
	}
	return parseMsgReceipts(data, func(typ int) Kind {
		if typ == 1 || typ == 3 {
			return Arrived
		}
		return Other
	})
}

// HMS receipt statuses (developer.huawei.com, "Message receipt"): 0 delivered; 2 the app is not
// installed, 5 the token is not the device's current user's: DROP. 6 (notifications off), 10
// (inactive device), 15, 27, 102, 201 and the rest: nothing done.
var hmsDead = map[int]bool{2: true, 5: true}

// parseHMS reads the HMS receipt (Honor's is taken to be the same [unconfirmed]):
// {"statuses": [{"biTag", "appid", "token", "status", "timestamp", "requestId"}]}.
func parseHMS(body []byte) ([]Entry, error) {
	var r struct {
		Statuses []struct {
			BiTag     string      `json:"biTag"`
			Token     string      `json:"token"`
			Status    json.Number `json:"status"`
			Timestamp json.Number `json:"timestamp"`
		} `json:"statuses"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errors.New("the receipt is not a JSON object with statuses")
	}
	if len(r.Statuses) > maxEntries {
		return nil, fmt.Errorf("the receipt holds more than %d devices", maxEntries)
	}
	out := make([]Entry, 0, len(r.Statuses))
	for _, s := range r.Statuses {
		pid, nid, ok := parseParam(s.BiTag)
		if !ok || s.Token == "" {
			continue
		}
		code, err := strconv.Atoi(s.Status.String())
		if err != nil {
			return nil, errors.New("a receipt status is not a number")
		}
		k := Other
		switch {
		case code == 0:
			k = Arrived
		case hmsDead[code]:
			k = Dead
		}
		var at time.Time
		if ms, err := s.Timestamp.Int64(); err == nil && ms > 0 {
			at = time.UnixMilli(ms)
		}
		out = append(out, Entry{PushID: pid, NotificationID: nid, DeviceID: s.Token, Kind: k, Status: "status " + s.Status.String(), At: at})
	}
	return out, nil
}

// parseVivo reads vivo's receipt: {"<taskId>": {"param", "targets" (comma-joined regIds)}}
// [unconfirmed]; vivo sends receipts of single sends only, and only for arrivals (dead regIds
// come back in the send reply, 10302).
func parseVivo(body []byte) ([]Entry, error) {
	return parseMsgReceipts(body, func(int) Kind { return Arrived })
}

// parseOppo reads OPPO's receipt (OPPO's "消息回执" page): a JSON array of events {messageId,
// appId, taskId, registrationIds (comma-joined), eventTime, param, eventType}; eventType
// push_arrive is an arrival, regid_invalid [unconfirmed] a dead regId.
func parseOppo(body []byte) ([]Entry, error) {
	var evs []struct {
		RegistrationIDs string      `json:"registrationIds"`
		Param           string      `json:"param"`
		EventType       string      `json:"eventType"`
		EventTime       json.Number `json:"eventTime"`
	}
	if err := json.Unmarshal(body, &evs); err != nil {
		return nil, errors.New("the receipt is not a JSON array of events")
	}
	var out []Entry
	for _, e := range evs {
		pid, nid, ok := parseParam(e.Param)
		if !ok {
			continue
		}
		k := Other
		switch e.EventType {
		case "push_arrive":
			k = Arrived
		case "regid_invalid":
			k = Dead
		}
		var at time.Time
		if ms, err := e.EventTime.Int64(); err == nil && ms > 0 {
			at = time.UnixMilli(ms)
		}
		for _, id := range splitIDs(e.RegistrationIDs) {
			out = append(out, Entry{PushID: pid, NotificationID: nid, DeviceID: id, Kind: k, Status: e.EventType, At: at})
		}
		if len(out) > maxEntries {
			break
		}
	}
	return out, nil
}
