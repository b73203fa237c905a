package query

import "sort"

// Hints tell the fan-out planner where the result set can lie. They are conservative: a
// document the query matches always satisfies them, provided the id fields and deviceType
// hold strings and channels an array of strings, as stored installations do. Only
// conditions ANDed at the top level (directly or through $and) give hints; nothing under
// $or, $nor or $not does.
type Hints struct {
	// Non-nil: the result set is within these ids (equality or $in, intersected when
	// several conditions apply; empty non-nil means nothing matches). Sorted.
	ObjectIDs, DeviceTokens, InstallationIDs, RegistrationIDs []string
	// Each must be contained by `channels` (equality, $all, or a one-value $in or resolved
	// $select); the planner may scan by_channel of any one. Sorted, distinct.
	Channels []string
	// DeviceType is "" unless the query pins deviceType by equality (or a one-value $in or
	// resolved $select).
	DeviceType string
}

// Hints extracts the planner hints. After Resolve, a $select on an id field also gives
// its result values as ids.
func (q *Query) Hints() Hints {
	var h Hints
	if q == nil || q.root == nil {
		return h
	}
	var w hintWalker
	w.walk(q.root)
	h.ObjectIDs = w.ids[0].list()
	h.DeviceTokens = w.ids[1].list()
	h.InstallationIDs = w.ids[2].list()
	h.RegistrationIDs = w.ids[3].list()
	if len(w.channels) > 0 {
		h.Channels = sortedSet(w.channels)
	}
	h.DeviceType = w.deviceType
	return h
}

var idFields = [4]string{"objectId", "deviceToken", "installationId", "registrationId"}

// idSet is the running intersection of the ids an id field may take; nil set: unconstrained.
type idSet struct {
	set         map[string]struct{}
	constrained bool
}

func (s *idSet) intersect(vals []string) {
	next := make(map[string]struct{}, len(vals))
	for _, v := range vals {
		if _, ok := s.set[v]; ok || !s.constrained {
			next[v] = struct{}{}
		}
	}
	s.set, s.constrained = next, true
}

func (s *idSet) list() []string {
	if !s.constrained {
		return nil
	}
	out := make([]string, 0, len(s.set))
	for k := range s.set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type hintWalker struct {
	ids        [4]idSet
	channels   map[string]struct{}
	deviceType string
}

func (w *hintWalker) walk(n node) {
	switch n := n.(type) {
	case andNode:
		for _, c := range n {
			w.walk(c)
		}
	case *fieldNode:
		if len(n.path) == 0 {
			for _, p := range n.preds {
				w.pred(n.name, p)
			}
		}
	}
}

// pred records what one top-level condition on a field guarantees.
func (w *hintWalker) pred(field string, p pred) {
	vals, ok := stringsOf(p)
	if !ok {
		return
	}
	for i, f := range idFields {
		if field == f {
			if _, isAll := p.(*allPred); !isAll {
				w.ids[i].intersect(vals)
			}
			return
		}
	}
	switch field {
	case "channels":
		// $in and a resolved $select mean "any of": they pin a channel only with one value.
		switch p.(type) {
		case *inPred, *subPred:
			if len(vals) != 1 {
				return
			}
		}
		if w.channels == nil {
			w.channels = make(map[string]struct{})
		}
		for _, v := range vals {
			w.channels[v] = struct{}{}
		}
	case "deviceType":
		if len(vals) == 1 && w.deviceType == "" {
			w.deviceType = vals[0]
		}
	}
}

// stringsOf returns the strings a field must equal (or contain, for $all) when p holds:
// for equality one string, for $in and a resolved $select the list, for $all every value.
func stringsOf(p pred) ([]string, bool) {
	switch p := p.(type) {
	case *eqPred:
		if p.v.kind == kindStr {
			return []string{p.v.s}, true
		}
	case *inPred:
		if !p.neg {
			return p.set.onlyStrings()
		}
	case *allPred:
		out := make([]string, 0, len(p.vals))
		for _, v := range p.vals {
			if v.kind != kindStr {
				return nil, false
			}
			out = append(out, v.s)
		}
		return out, len(out) > 0
	case *subPred:
		if p.op == "$select" && p.ids != nil {
			return p.set.onlyStrings()
		}
	}
	return nil, false
}
