//go:build race

package server

// race: the race detector is on (TestMillionTinyRows ran 8 times slower
// with it); the heaviest tests run fewer rows, enough to find races.
const race = true
