package wire

import (
	"encoding/json"

	"github.com/pushd/pushd/push"
)

// sdkQueryParams are the members the original's SDKs merge into a query push next to where:
// the whole query's parameters (Swift SDK Push.swift: query.lconValue, with className;
// Objective-C LCPush.m and Java LCPush.java: the query's assembleParameters). They shape a
// listing, not an audience: a push goes to every installation the where matches, so they are
// accepted and dropped, except className, which must name the installation class.
var sdkQueryParams = []string{"className", "limit", "skip", "order", "include", "keys", "returnACL"}

// dropSDKQueryParams removes sdkQueryParams from f, refusing a className other than
// _Installation.
func (f fields) dropSDKQueryParams() *push.Error {
	if raw, ok := f["className"]; ok && !isNull(raw) {
		var name string
		if json.Unmarshal(raw, &name) != nil || name != "_Installation" {
			return push.Errorf(push.CodeValidation, `className must be "_Installation": a push goes to installations`)
		}
	}
	for _, k := range sdkQueryParams {
		delete(f, k)
	}
	return nil
}
