package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// FCM message limits (gateways.md §2.2, §2.4).
const (
	fcmMaxPayload      = 4096
	fcmMaxTopicPayload = 2048
	fcmMaxTTLSeconds   = 2419200 // four weeks
	fcmMaxRequest      = 65536   // request bodies beyond this are refused before parsing
)

var (
	ttlRE   = regexp.MustCompile(`^\d+(\.\d{1,9})?s$`)
	topicRE = regexp.MustCompile(`^[a-zA-Z0-9\-_.~%]+$`)
)

// fcmRequest is the messages:send body. Both snake_case (SDKs) and lowerCamelCase (proto
// JSON) names are accepted, as Google's parser does; anything else is an unknown field.
type fcmRequest struct {
	ValidateOnly  bool        `json:"validate_only"`
	ValidateOnlyC bool        `json:"validateOnly"`
	Message       *fcmMessage `json:"message"`
}

type fcmMessage struct {
	Name         string                     `json:"name"`
	Token        string                     `json:"token"`
	Topic        string                     `json:"topic"`
	Condition    string                     `json:"condition"`
	Data         map[string]json.RawMessage `json:"data"`
	Notification *fcmNotification           `json:"notification"`
	Android      *fcmAndroid                `json:"android"`
	Webpush      json.RawMessage            `json:"webpush"`
	APNs         json.RawMessage            `json:"apns"`
	FcmOptions   json.RawMessage            `json:"fcm_options"`
	FcmOptionsC  json.RawMessage            `json:"fcmOptions"`
}

type fcmNotification struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Image string `json:"image"`
}

type fcmAndroid struct {
	CollapseKey            string                     `json:"collapse_key"`
	CollapseKeyC           string                     `json:"collapseKey"`
	Priority               string                     `json:"priority"`
	TTL                    *string                    `json:"ttl"`
	RestrictedPackageName  string                     `json:"restricted_package_name"`
	RestrictedPackageNameC string                     `json:"restrictedPackageName"`
	Data                   map[string]json.RawMessage `json:"data"`
	Notification           map[string]json.RawMessage `json:"notification"`
	FcmOptions             json.RawMessage            `json:"fcm_options"`
	FcmOptionsC            json.RawMessage            `json:"fcmOptions"`
	DirectBootOK           bool                       `json:"direct_boot_ok"`
	DirectBootOKC          bool                       `json:"directBootOk"`
	BandwidthConstrainedOK bool                       `json:"bandwidth_constrained_ok"`
	BandwidthConstrainedOC bool                       `json:"bandwidthConstrainedOk"`
	RestrictedSatelliteOK  bool                       `json:"restricted_satellite_ok"`
	RestrictedSatelliteOC  bool                       `json:"restrictedSatelliteOk"`
}

// violation is a 400 INVALID_ARGUMENT answer: a message and the offending field.
type violation struct {
	field, desc string
}

func (v *violation) message() string {
	if v.field == "message" || strings.HasPrefix(v.desc, "Invalid") {
		return v.desc
	}
	return "Request contains an invalid argument."
}

// decodeFCM parses and validates a send body.
func decodeFCM(body []byte) (*fcmRequest, *violation) {
	var req fcmRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, &violation{field: "message", desc: "Invalid JSON payload received. " + jsonProblem(err)}
	}
	if dec.More() {
		return nil, &violation{field: "message", desc: "Invalid JSON payload received. Unexpected token after the body."}
	}
	m := req.Message
	if m == nil {
		return nil, &violation{field: "message", desc: "Recipient of the message is not set."}
	}
	targets := 0
	for _, t := range [...]string{m.Token, m.Topic, m.Condition} {
		if t != "" {
			targets++
		}
	}
	switch {
	case targets == 0:
		return nil, &violation{field: "message", desc: "Recipient of the message is not set."}
	case targets > 1:
		return nil, &violation{field: "message", desc: "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set more than one of token, topic, condition."}
	}
	if m.Topic != "" && !topicRE.MatchString(strings.TrimPrefix(m.Topic, "/topics/")) {
		return nil, &violation{field: "message.topic", desc: "Invalid topic name " + strconv.Quote(m.Topic)}
	}
	if v := checkData("message.data", m.Data); v != nil {
		return nil, v
	}
	size := dataSize(m.Data)
	if n := m.Notification; n != nil {
		size += len(n.Title) + len(n.Body) + len(n.Image)
	}
	if a := m.Android; a != nil {
		if a.TTL != nil {
			if v := checkTTL(*a.TTL); v != nil {
				return nil, v
			}
		}
		if a.Priority != "" && !strings.EqualFold(a.Priority, "normal") && !strings.EqualFold(a.Priority, "high") {
			return nil, &violation{field: "message.android.priority",
				desc: "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), " + strconv.Quote(a.Priority)}
		}
		if v := checkData("message.android.data", a.Data); v != nil {
			return nil, v
		}
		size += dataSize(a.Data)
		for k, v := range a.Notification {
			size += len(k) + len(v)
		}
	}
	size += len(m.APNs) + len(m.Webpush)
	limit := fcmMaxPayload
	if m.Token == "" {
		limit = fcmMaxTopicPayload
	}
	if size > limit {
		return nil, &violation{field: "message", desc: fmt.Sprintf("Message is too big (%d bytes; the limit is %d).", size, limit)}
	}
	return &req, nil
}

// checkData requires string values and no reserved keys.
func checkData(field string, d map[string]json.RawMessage) *violation {
	for k, v := range d {
		if len(v) == 0 || v[0] != '"' {
			return &violation{field: field, desc: fmt.Sprintf("Invalid value at '%s[%s].value' (TYPE_STRING), %s", field, k, v)}
		}
		lk := strings.ToLower(k)
		if k == "from" || k == "notification" || k == "message_type" || strings.HasPrefix(lk, "google") || strings.HasPrefix(lk, "gcm") {
			return &violation{field: field, desc: "Invalid data payload key: " + k}
		}
	}
	return nil
}

// dataSize counts keys and values as FCM does (values without their JSON quotes).
func dataSize(d map[string]json.RawMessage) int {
	n := 0
	for k, v := range d {
		n += len(k) + len(v) - 2
	}
	return n
}

func checkTTL(ttl string) *violation {
	bad := &violation{field: "message.android.ttl",
		desc: "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), " + strconv.Quote(ttl)}
	if !ttlRE.MatchString(ttl) {
		return bad
	}
	secs, err := strconv.ParseFloat(strings.TrimSuffix(ttl, "s"), 64)
	if err != nil || secs > fcmMaxTTLSeconds {
		return bad
	}
	return nil
}

// jsonProblem words a decode error without echoing the body.
func jsonProblem(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "Unknown name " + strings.TrimPrefix(msg, "json: unknown field ") + ": Cannot find field."
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("Invalid value at '%s' (%s), %s", te.Field, te.Type, te.Value)
	}
	return "Syntax error."
}
