package store

// ImportOutcome says what a bulk import did with one installation (see the importing store's
// ImportInstallations). Imports decide by recency, so that a second run, or a run after a
// crash, ends in the same state: of two versions of one objectId, and of two installations
// holding one device id, the one updated last wins (a tie goes to the greater objectId).
type ImportOutcome uint8

const (
	// ImportStored: the installation was written (created, or replacing an older or equal
	// version of the same objectId; installations of older registrations of one of its device
	// ids were deleted, as the API deletes stale registrations).
	ImportStored ImportOutcome = iota + 1
	// ImportKeptNewer: the store holds a version of this objectId updated later; it is kept.
	ImportKeptNewer
	// ImportStale: another installation updated later holds one of its device ids (in the
	// store or in the same import); this one is an older registration of that device.
	ImportStale
	// ImportConflict: its device ids and another imported installation's are swapped
	// compared with the store; it was not written (import it again on its own).
	ImportConflict
)

func (o ImportOutcome) String() string {
	switch o {
	case ImportStored:
		return "stored"
	case ImportKeptNewer:
		return "kept_newer"
	case ImportStale:
		return "stale"
	case ImportConflict:
		return "conflict"
	}
	return "unknown"
}
