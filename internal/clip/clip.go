// Package clip bounds text a client sent (action, op, parameter and column
// names, command JSON) before it goes into an error, a gRPC status or a
// log line: a 100,000-character name is echoed as its first Max bytes and
// its length, never whole.
package clip

import (
	"regexp"
	"strconv"
	"unicode/utf8"
)

// Max is how many bytes of one client-supplied string are kept.
const Max = 128

// MaxMessage is how many bytes of a whole message Message keeps.
const MaxMessage = 1024

// String is s when it has at most Max bytes, else its first Max bytes (cut
// at a character boundary) followed by "…(N bytes)", N being len(s).
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	return prefix(s, Max) + more(len(s))
}

// Quote is s as %q writes it, clipped as String clips: "abc…"…(N bytes)
// when s is longer than Max, so the quoted part is exactly s's prefix.
func Quote(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	return strconv.Quote(prefix(s, Max)) + more(len(s))
}

// MaxList is how many bytes of names Strings keeps.
const MaxList = 512

// Strings clips each of names, as String does, and keeps as many as fit
// in MaxList bytes, then "…(K more)": for messages that list what a
// client sent (its input's column names).
func Strings(names []string) []string {
	var out []string
	size := 0
	for i, s := range names {
		s = String(s)
		if size += len(s); size > MaxList && i > 0 {
			return append(out, "…("+strconv.Itoa(len(names)-i)+" more)")
		}
		out = append(out, s)
	}
	return out
}

// quoted matches a Go-quoted string, as %q writes one.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// Message bounds a whole message that may hold client text in quotes
// (errors from other packages, at the service boundary): each quoted
// string longer than Max is clipped as Quote clips it, and the result is
// cut to MaxMessage bytes.
func Message(msg string) string {
	if len(msg) <= Max {
		return msg
	}
	msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) <= Max+2 {
			return q
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			return q
		}
		return Quote(s)
	})
	if len(msg) <= MaxMessage {
		return msg
	}
	return prefix(msg, MaxMessage) + more(len(msg))
}

// prefix is s's first n bytes at most, ending on a character boundary.
func prefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func more(n int) string { return "…(" + strconv.Itoa(n) + " bytes)" }
