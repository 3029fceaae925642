// Package recsize measures Arrow record batches by the bytes they hold:
// what the server's memory budget counts for an input batch and what
// the load generator counts as received.
package recsize
