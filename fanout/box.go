package fanout

import "unsafe"

// box returns s as an interface value without allocating: it stores s in *slot and returns an
// interface whose data word points at the slot. Converting a string to any normally copies
// its header to the heap, one allocation per field per row on the scan path — the largest cost
// of filtering a route after the scan itself.
//
// The value is only valid until the slot is written again: rowDoc rewrites its slots per row,
// and Query.Match does not keep the values it reads (it compares and returns). Nothing else
// may receive a boxed value.
func box(slot *string, s string) any {
	*slot = s
	v := any("")
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(slot)
	return v
}

// eface is the runtime layout of an empty interface.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// boxSlice is box for a []any (the channels array).
func boxSlice(slot *[]any, s []any) any {
	*slot = s
	v := any([]any(nil))
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(slot)
	return v
}

// boxFloat is box for a float64 (a JSON number).
func boxFloat(slot *float64, f float64) any {
	*slot = f
	v := any(float64(0))
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(slot)
	return v
}
