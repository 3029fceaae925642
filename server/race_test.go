//go:build race

package server

// race: the race detector is on (it slows the server ~10x); the heaviest
// tests run fewer rows, enough for its purpose, finding races.
const race = true
