package api

import (
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
)

// maxImportedObjectID bounds an imported objectId: the original's ids are 24 hex digits,
// Parse's 10 letters and digits; maxObjectIDLen is the longest any route accepts.
const maxImportedObjectID = maxObjectIDLen

// ImportedInstallation checks one installation row of another service's export (the scan
// endpoint's results, a console JSON export, a Parse export) with the rules of
// POST /1.1/installations, and builds the installation to store. Unlike a create, the row
// keeps its objectId, createdAt and updatedAt: they are what the SDKs on the phones know.
//
// row is the object as the REST API shows it: createdAt and updatedAt as ISO strings (a
// {"__type":"Date"} is accepted too), other dates as {"__type":"Date","iso":...}. row is
// modified. A refused row gets the *push.Error a create with that body would get, or one
// naming the missing or malformed objectId, createdAt or updatedAt.
func ImportedInstallation(row map[string]any) (push.Installation, *push.Error) {
	oid, ok := row[fObjectID].(string)
	if !ok || !validImportedID(oid) {
		return push.Installation{}, push.Errorf(push.CodeMissingRequired, "objectId is missing or not 1 to %d letters and digits", maxImportedObjectID)
	}
	created, perr := importedTime(row, fCreatedAt)
	if perr != nil {
		return push.Installation{}, perr
	}
	updated := created
	if _, has := row[fUpdatedAt]; has {
		if updated, perr = importedTime(row, fUpdatedAt); perr != nil {
			return push.Installation{}, perr
		}
	}
	if updated.Before(created) {
		updated = created // a row cannot have changed before it existed
	}
	for f := range readOnlyFields {
		delete(row, f)
	}
	if perr := checkBodyFields(row); perr != nil {
		return push.Installation{}, perr
	}
	if perr := validateDoc(row); perr != nil {
		return push.Installation{}, perr
	}
	inst, err := buildInstallation(oid, row, created, updated)
	if err != nil {
		if perr, ok := err.(*push.Error); ok {
			return push.Installation{}, perr
		}
		return push.Installation{}, push.Errorf(push.CodeInvalidType, "cannot encode the installation: %v", err)
	}
	return inst, nil
}

func validImportedID(id string) bool {
	if id == "" || len(id) > maxImportedObjectID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// importedTime reads a built-in date of an exported row: an ISO string as the REST API
// returns createdAt and updatedAt, or a {"__type":"Date","iso":...} object.
func importedTime(row map[string]any, field string) (time.Time, *push.Error) {
	var iso string
	switch v := row[field].(type) {
	case string:
		iso = v
	case map[string]any:
		if v["__type"] == "Date" {
			iso, _ = v["iso"].(string)
		}
	}
	t, ok := query.ParseISO(strings.TrimSpace(iso))
	if !ok {
		return time.Time{}, push.Errorf(push.CodeMissingRequired, "%s is missing or not an ISO 8601 date", field)
	}
	return t.UTC(), nil
}

// DecodeImportRow decodes one exported row with the checks of an installation body: a strict
// JSON object (no duplicate keys, bounded nesting).
func DecodeImportRow(raw []byte) (map[string]any, *push.Error) {
	return decodeObject(raw)
}

// ImportReport is what an import did: the answer of POST /admin/apps/<id>/installations/import
// and what pushd import prints. Refusals lists the first MaxImportRefusals refused rows; the
// counts cover all.
type ImportReport struct {
	Rows      int `json:"rows"`      // rows read
	Stored    int `json:"stored"`    // written
	KeptNewer int `json:"keptNewer"` // the store (or the import) has a newer version of the objectId
	Stale     int `json:"stale"`     // a newer installation holds one of its device ids
	Conflicts int `json:"conflicts"` // device ids swapped with another row of the import
	Refused   int `json:"refused"`   // failed validation
	// Inactive counts the valid rows last updated more than push.InactiveAfter ago: stored,
	// but the sweeper deletes them at its next pass, as the original deletes such rows.
	Inactive int             `json:"inactive"`
	Reasons  map[string]int  `json:"reasons,omitempty"`
	Refusals []ImportRefusal `json:"refusals,omitempty"`
}

// MaxImportRefusals bounds the refused rows a report lists one by one (a file of a million bad
// rows must not make a million-entry report); Reasons counts them all by code.
const MaxImportRefusals = 1000

// ImportRefusal is one refused row: its position in the input (1-based), its objectId when
// it has one, and the error a create would get.
type ImportRefusal struct {
	Row      int    `json:"row"`
	ObjectID string `json:"objectId,omitempty"`
	Code     int    `json:"code"`
	Error    string `json:"error"`
}

// Refuse counts a refused row.
func (r *ImportReport) Refuse(row int, objectID string, perr *push.Error) {
	r.Refused++
	if r.Reasons == nil {
		r.Reasons = map[string]int{}
	}
	r.Reasons[reasonKey(perr)]++
	if len(r.Refusals) < MaxImportRefusals {
		r.Refusals = append(r.Refusals, ImportRefusal{Row: row, ObjectID: objectID, Code: int(perr.Code), Error: perr.Message})
	}
}

// reasonKey groups refusals by code and the message up to its first colon or quote, so
// "invalid channel name "x y"" and "invalid channel name "z!"" count together.
func reasonKey(perr *push.Error) string {
	m := perr.Message
	if i := strings.IndexAny(m, ":\""); i > 0 {
		m = strings.TrimSpace(m[:i])
	}
	return strconv.Itoa(int(perr.Code)) + " " + m
}
