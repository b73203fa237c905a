package query

import (
	"context"
	"errors"
	"fmt"
)

// InstallationClass is the only class sub-queries may name.
const InstallationClass = "_Installation"

// subPred is $inQuery, $notInQuery, $select or $dontSelect. Its result set is filled by
// Resolve; before that the owning Query matches nothing.
type subPred struct {
	op    string // the operator, for messages
	field string // the field it applies to, for messages
	sub   *Query
	key   string   // $select/$dontSelect: the sub-query field whose values are collected
	path  []string // further steps of key
	limit int
	// limitSet: the sub-query has its own limit, so its first limit results are what was
	// asked for; otherwise limit is MaxSubqueryResults.
	limitSet bool
	neg      bool
	// whole: the results decide which installations the top-level query excludes (see
	// markWhole), so a cut result set would widen the match: past the cap it is an error.
	whole bool

	ids map[string]struct{} // $inQuery/$notInQuery: objectIds of the results
	set inSet               // $select/$dontSelect: values of key in the results
}

func (p *subPred) isSelect() bool { return p.op == "$select" || p.op == "$dontSelect" }

func (p *subPred) test(v any, ok bool) bool {
	if p.isSelect() {
		return p.set.contains(v, ok) != p.neg
	}
	return p.hasPointer(v, ok) != p.neg
}

// hasPointer reports whether v is, or is an array holding, a Pointer to a result.
func (p *subPred) hasPointer(v any, ok bool) bool {
	if !ok {
		return false
	}
	if c, id, isPtr := docPtr(v); isPtr {
		_, in := p.ids[id]
		return in && c == InstallationClass
	}
	if a, isArr := v.([]any); isArr {
		for _, e := range a {
			if c, id, isPtr := docPtr(e); isPtr && c == InstallationClass {
				if _, in := p.ids[id]; in {
					return true
				}
			}
		}
	}
	return false
}

// subPred parses the operand of a sub-query operator.
func (p *parser) subPred(op string, x any, field string, depth int) (*subPred, error) {
	m, ok := x.(map[string]any)
	if !ok {
		return nil, errQuery("%s on field %q expects an object", op, field)
	}
	sp := &subPred{op: op, field: field, neg: op == "$notInQuery" || op == "$dontSelect"}
	inner := m
	if sp.isSelect() {
		for k := range m {
			if k != "query" && k != "key" {
				return nil, errQuery("%s on field %q: unknown key %q (expected query and key)", op, field, clip(k))
			}
		}
		key, ok := m["key"].(string)
		if !ok {
			return nil, errQuery("%s on field %q expects a string key", op, field)
		}
		top, path, err := splitField(key)
		if err != nil {
			return nil, err
		}
		sp.key, sp.path = top, path
		if inner, ok = m["query"].(map[string]any); !ok {
			return nil, errQuery("%s on field %q expects a query object {className, where}", op, field)
		}
	}
	sub, limit, err := p.subquery(inner, op, field, depth)
	if err != nil {
		return nil, err
	}
	_, limitSet := inner["limit"]
	sp.sub, sp.limit, sp.limitSet = sub, limit, limitSet
	return sp, nil
}

// subquery parses {className, where[, limit]}.
func (p *parser) subquery(m map[string]any, op, field string, depth int) (*Query, int, error) {
	p.subs++
	if p.subs > MaxSubqueries {
		return nil, 0, errQuery("more than %d sub-queries", MaxSubqueries)
	}
	if depth > MaxDepth {
		return nil, 0, errQuery("nested deeper than %d levels", MaxDepth)
	}
	for k := range m {
		if k != "where" && k != "className" && k != "limit" {
			return nil, 0, errQuery("%s on field %q: unknown key %q (expected className, where, limit)", op, field, clip(k))
		}
	}
	cls, _ := m["className"].(string)
	if cls != InstallationClass {
		return nil, 0, errQuery("%s on field %q: className must be %s, not %q", op, field, InstallationClass, clip(cls))
	}
	limit := MaxSubqueryResults
	if l, present := m["limit"]; present {
		f, ok := l.(float64)
		if !ok || f < 1 || f > MaxSubqueryResults || f != float64(int(f)) {
			return nil, 0, errQuery("%s on field %q: limit must be an integer from 1 to %d", op, field, MaxSubqueryResults)
		}
		limit = int(f)
	}
	sub, err := p.query(m["where"], depth, op+".where")
	if err != nil {
		return nil, 0, err
	}
	return sub, limit, nil
}

// errEnough stops a sub-query run once it has produced its limit of results.
var errEnough = errors.New("sub-query result limit reached")

// Resolve runs the query's sub-queries ($inQuery, $notInQuery, $select, $dontSelect) once,
// innermost first, through run, and keeps their results for Match. run must call visit for
// each document matching sub (sub.Match is the residual filter; sub.Hints may narrow the
// scan) and stop when visit returns an error, returning that error (wrapping is fine): a
// sub-query stops after its own limit, or after MaxSubqueryResults documents when cutting
// its results only loses matches. A sub-query without a limit whose results exclude
// installations ($notInQuery, $dontSelect, or any sub-query under $nor/$not) and that
// matches more than MaxSubqueryResults documents is a *push.Error with code 300: excluding
// only some of them would match installations the query excludes. A second call does
// nothing. Resolve must not run concurrently with Match.
func (q *Query) Resolve(ctx context.Context, run func(ctx context.Context, sub *Query, visit func(Doc) error) error) error {
	if q == nil || q.resolved {
		return nil
	}
	if len(q.subs) > 0 && run == nil {
		return errors.New("cannot resolve sub-queries: no runner")
	}
	for _, s := range q.subs {
		if err := s.sub.Resolve(ctx, run); err != nil {
			return err
		}
		if err := s.resolve(ctx, run); err != nil {
			return fmt.Errorf("cannot run %s sub-query: %w", s.op, err)
		}
	}
	q.resolved = true
	return nil
}

func (s *subPred) resolve(ctx context.Context, run func(ctx context.Context, sub *Query, visit func(Doc) error) error) error {
	ids := make(map[string]struct{})
	var set inSet
	n := 0
	// A whole result set must be seen to the end, so its scan runs past the cap to find out
	// whether there is more.
	whole := s.whole && !s.limitSet
	visit := func(d Doc) error {
		if n >= s.limit {
			if whole {
				return errQuery("the %s sub-query on field %q matches more than %d installations; "+
					"its results decide which installations are excluded, so they may not be cut: narrow its where",
					s.op, s.field, s.limit)
			}
			return errEnough
		}
		n++
		if s.isSelect() {
			v, ok := d.Get(s.key)
			for _, p := range s.path {
				m, isMap := v.(map[string]any)
				if !ok || !isMap {
					ok = false
					break
				}
				v, ok = m[p]
			}
			if ok {
				if val, err := parseValue(v, s.key); err == nil {
					set.add(val)
				}
			}
		} else if v, ok := d.Get("objectId"); ok {
			if id, isStr := v.(string); isStr {
				ids[id] = struct{}{}
			}
		}
		if n >= s.limit && !whole {
			return errEnough
		}
		return nil
	}
	if err := run(ctx, s.sub, visit); err != nil && !errors.Is(err, errEnough) {
		return err
	}
	s.ids, s.set = ids, set
	return nil
}

// markWhole flags the sub-queries under n whose results must be complete: those whose
// results exclude installations from the top-level match. neg says whether n sits under an
// odd number of negations ($nor, $not, field-level $not, a negated sub-query). For a
// sub-query there, fewer results would mean more matches.
func markWhole(n node, neg bool) {
	eachField(n, neg, func(f *fieldNode, neg bool) {
		for _, p := range f.preds {
			markWholePred(p, neg)
		}
	})
}

func markWholePred(p pred, neg bool) {
	switch p := p.(type) {
	case *notPred:
		for _, q := range p.preds {
			markWholePred(q, !neg)
		}
	case *subPred:
		p.whole = neg != p.neg
		markWhole(p.sub.root, p.whole)
	}
}
