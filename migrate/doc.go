// Package migrate moves installations into and out of pushd: it reads the original service's
// exports (the console's JSON export, the backup's _Installation.bson, Parse's exports), walks
// the original's scan endpoint (GET /1.1/scan/classes/_Installation), checks every row with the
// REST API's rules (api.ImportedInstallation) and writes the valid ones through the store's bulk
// path; and it writes a store's installations as JSON lines (pushd export).
//
// A Loader is used by one goroutine at a time; a Puller runs one fetching goroutine beside
// the caller's, which it owns and waits for.
package migrate
