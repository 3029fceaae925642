// Package api is the JSON the sidecar's Flight actions answer with
// (capabilities, health, stats), as Go types: the server writes them, and
// Go clients (pixelflight bench, the tests) read them, from this one
// place. docs/protocol.md says what each field means.
package api
