package clip

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	short := strings.Repeat("a", Max)
	if got := String(short); got != short {
		t.Errorf("String of %d bytes changed: %q", Max, got)
	}
	long := strings.Repeat("x", 100_000)
	if got, want := String(long), strings.Repeat("x", Max)+"…(100000 bytes)"; got != want {
		t.Errorf("String(100,000 x) = %q, want %q", got, want)
	}
	// Cut on a character boundary: "é" is 2 bytes, so 128 bytes hold 64.
	accents := strings.Repeat("é", 100)
	if got := String("a" + accents); !utf8.ValidString(got) || !strings.HasPrefix(got, "a"+strings.Repeat("é", 63)+"…(201 bytes)") {
		t.Errorf("String cut a character: %q", got)
	}
}

func TestQuote(t *testing.T) {
	if got := Quote(`a"b`); got != `"a\"b"` {
		t.Errorf("Quote = %s", got)
	}
	got := Quote(strings.Repeat("y", 5000))
	if want := strconv.Quote(strings.Repeat("y", Max)) + "…(5000 bytes)"; got != want {
		t.Errorf("Quote(5000 y) = %s, want %s", got, want)
	}
}

func TestStrings(t *testing.T) {
	long := strings.Repeat("b", 300)
	names := []string{"a", long, long, long, long, "c"}
	got := Strings(names)
	b := strings.Repeat("b", Max) + "…(300 bytes)"
	want := []string{"a", b, b, b, "…(2 more)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Strings = %q, want %q", got, want)
	}
	if got := Strings([]string{"x", "y"}); strings.Join(got, "|") != "x|y" {
		t.Errorf("Strings of 2 = %q", got)
	}
}

func TestMessage(t *testing.T) {
	name := strings.Repeat("z", 100_000)
	msg := "bad command: unknown op " + strconv.Quote(name) + " (known: echo, info)"
	got := Message(msg)
	want := "bad command: unknown op " + Quote(name) + " (known: echo, info)"
	if got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	// Long text outside quotes: cut to MaxMessage, with the length.
	bare := strings.Repeat("w", 10_000)
	if got := Message(bare); got != strings.Repeat("w", MaxMessage)+"…(10000 bytes)" {
		t.Errorf("Message of 10,000 bare bytes: %d bytes", len(got))
	}
	// Short messages, and short quoted strings, are left alone.
	for _, m := range []string{"ok", `unknown parameter "sigam" (did you mean "sigma"?)` + strings.Repeat(" ", 200)} {
		if got := Message(m); got != m {
			t.Errorf("Message(%q) = %q", m, got)
		}
	}
	// An unbalanced quote does not unbound it.
	if got := Message(`"` + name); len(got) > MaxMessage+32 {
		t.Errorf("Message with an open quote: %d bytes", len(got))
	}
}
