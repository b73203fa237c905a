// Package query owns the `where` language of pushd: it parses a query over `_Installation`
// once into a typed tree, evaluates it against documents (Doc) without reflection or
// allocation, extracts index hints for the fan-out planner, and resolves sub-queries
// ($inQuery, $notInQuery, $select, $dontSelect) through a caller-supplied runner.
//
// # Language
//
// A query is a JSON object (or an array of objects, an implicit AND). Each key is a field
// name or a logical operator. Field names consist of letters, digits and underscores and
// start with a letter or an underscore; dotted paths (`a.b`) reach into objects. A field's
// value is a literal (equality) or an object of operators:
//
//	equality      {"k": v}            equal; on an array field: the array contains v;
//	                                  an array operand means exact array equality;
//	                                  {"k": null} also matches a missing field
//	$eq $ne       equal / not equal   $ne on an array field: no element equals
//	$lt $lte $gt $gte                 numbers, strings, dates, booleans; any array element;
//	                                  or a date relative to the query's instant (ParseAt):
//	                                  {"$relativeTime": "3 days ago" | "in 2 hours" | "now"}
//	$in $nin      list membership     any element in the list / no element in the list;
//	                                  arrays in the list are flattened one level (Parse)
//	$all          every listed value is contained (an empty list matches nothing); or,
//	              when every value is {"$regex": p[, "$options": o]}, every regex matches
//	              the string or one of the array's elements (mixing the two is an error)
//	$containedBy  every element of the field is in the list (a scalar: is in the list)
//	$exists       true/false: field present or absent (a non-boolean operand is ignored)
//	$regex        RE2 syntax plus \Q...\E quoting; $options i, m, s, x
//	$size         array length
//	$not          negates an operator object on the same field
//	$nearSphere   with $maxDistance (radians), $maxDistanceInRadians, …InMiles, …InKilometers;
//	              without a maximum the distance is capped at 100 miles (original service docs)
//	$within       {"$box": [southwest, northeast]}
//	$geoWithin    {"$polygon": [points…]} or {"$centerSphere": [center, radians]} (or $box)
//	$inQuery $notInQuery   {"where":…, "className":"_Installation"[, "limit": n]}: a
//	              Pointer to an installation that is (not) in the sub-query's results
//	$select $dontSelect    {"query":{"className":"_Installation","where":…}, "key": k}:
//	              the value is (not) among the sub-query results' values of k
//	$or $and $nor arrays of sub-queries; $not (top level) negates one sub-query
//
// Typed operands: {"__type":"Date","iso":…} compares against both stored date forms (an ISO
// 8601 string such as createdAt, and a Date object); {"__type":"GeoPoint","latitude":…,
// "longitude":…}; {"__type":"Pointer","className":…,"objectId":…}. A Date's iso is
// YYYY-MM-DDTHH:MM:SS, optionally with a fraction of up to 9 digits, then Z, ±HH:MM or
// nothing (meaning UTC). On createdAt and updatedAt a plain string operand (equality, $eq,
// $ne, $lt…$gte, elements of $in, $nin, $all, $containedBy) is read as a Date's iso, as
// Parse Server does; one that is not such a time is an error 111. Regular expressions use
// Go's RE2 engine, so matching time is linear in the input whatever the pattern.
//
// # Limits
//
// Each limit protects the parser and the per-row evaluation from hostile input; exceeding
// one is a *push.Error with code 300 naming the limit.
//
//	MaxQueryBytes      64 KiB  serialized query size (push bodies are below 4 KiB; installation
//	                           queries by URL are larger but never legitimately this large)
//	MaxDepth           16      nesting of logical operators, $not and sub-queries
//	MaxJSONDepth       64      raw JSON nesting, checked before decoding
//	MaxListLen         1000    elements of $in, $nin, $all, $containedBy, $polygon (the
//	                           original's page-size cap)
//	MaxConditions      256     field conditions plus logical operators in one query
//	MaxSubqueries      8       $inQuery/$notInQuery/$select/$dontSelect, each a full scan
//	MaxSubqueryResults 1000    results a sub-query contributes (the original's inner limit);
//	                           past it the results are cut, which only loses matches, except
//	                           for a sub-query whose results exclude installations
//	                           ($notInQuery, $dontSelect, any sub-query under $nor or $not)
//	                           and that has no limit of its own: cutting those would match
//	                           installations the query excludes, so Resolve refuses them
//	MaxRegexLen        1024    bytes of one $regex pattern
//
// # Concurrency
//
// Parse is safe for concurrent use. A *Query is immutable after Parse except for Resolve,
// which must complete before Match is called from other goroutines; after that Match,
// Fields and Hints are safe for concurrent use. Match on a query that still needs Resolve
// reports false for every document.
package query
