// Package jsondoc decodes and encodes JSON documents held as Go maps (map[string]any with
// []any, string, float64, bool and nil inside) exactly as encoding/json does, without reflection.
//
// It owns one thing: byte-for-byte and value-for-value agreement with encoding/json
// (json.Unmarshal into map[string]any or any, json.Marshal of such values) on the hot paths of the
// installation endpoints, at a fraction of the CPU. The differential fuzz targets in this package
// are the contract; every rule below was read from encoding/json's source (Go 1.26, v1 decoder):
//
//   - whitespace is space, \t, \n and \r only; anything after the top-level value is an error;
//   - objects and arrays nest at most 10000 deep (encoding/json's maxNestingDepth);
//   - numbers follow the JSON grammar and become float64 through strconv.ParseFloat, so a number
//     out of float64 range (1e400) is an error, as it is in encoding/json;
//   - strings: raw bytes below 0x20 are an error; escapes are \" \\ \/ \b \f \n \r \t and \uXXXX;
//     surrogate pairs are combined; a lone or broken surrogate and every invalid UTF-8 byte
//     become U+FFFD exactly as encoding/json's unquote does it;
//   - a duplicate object key replaces the earlier value (nested objects are not merged);
//   - encoding sorts map keys, escapes strings with HTML escaping on, formats float64 like
//     encoding/json's floatEncoder and rejects NaN and ±Inf; any value whose type is not one of
//     map[string]any, []any, string, float64, bool or nil is encoded by json.Marshal.
//
// Beside that contract, CheckStrict is the API's strict reading of a request body: it refuses
// what encoding/json (and Decode) accept but readers disagree on or that is unsafe to pass on
// (duplicate keys, invalid UTF-8 and lone surrogates, excessive depth, prototype keys).
//
// Error messages are our own ("cannot decode JSON: ... at offset N"); only the decision to fail
// matches encoding/json, not the text.
//
// Concurrency: the package has no shared mutable state; every function is safe for concurrent
// use. Decoded strings never alias the input, so the caller may reuse the input buffer.
package jsondoc
