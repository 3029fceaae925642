package cli

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Help goes to stdout and exits 0, with every flag as --name; usage errors
// go to stderr and exit 2.
func TestHelpOnStdout(t *testing.T) {
	for _, cmd := range []string{"serve", "health", "discover", "bench", "version"} {
		for _, h := range []string{"-h", "--help", "-help"} {
			var out, errOut bytes.Buffer
			code := Main([]string{cmd, h}, "x", &out, &errOut, env(nil))
			if code != 0 || errOut.Len() != 0 || !strings.HasPrefix(out.String(), "Usage: pixelflight "+cmd) {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want 0, the usage, nothing", cmd, h, code, out.String(), errOut.String())
				continue
			}
			if cmd == "version" {
				// No flags to list, and not the version itself.
				if !strings.Contains(out.String(), "takes no flags") || strings.Contains(out.String(), "pixelflight x ") {
					t.Errorf("%s %s: stdout %q", cmd, h, out.String())
				}
				continue
			}
			if m := regexp.MustCompile(`(?m)^  -[a-z]`).FindString(out.String()); m != "" {
				t.Errorf("%s %s: a flag with one dash: %q", cmd, h, m)
			}
			if !strings.Contains(out.String(), "\n  --") {
				t.Errorf("%s %s: no --flag in %q", cmd, h, out.String())
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"--help"}, "x", &out, &errOut, env(nil)); code != 0 || !strings.Contains(out.String(), "COMMAND --help") {
		t.Errorf("--help: exit %d, stdout %q", code, out.String())
	}
}

// Every flag serve defines is in its help.
func TestServeHelpListsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseServe([]string{"--help"}, &out, env(nil)); err != flag.ErrHelp {
		t.Fatalf("error %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"listen", "backend", "log-level", "log-format", "workers", "token-file", "insecure-listen-any", "gc-memory-limit", "sim"} {
		if !strings.Contains(out.String(), "\n  --"+name+" ") && !strings.Contains(out.String(), "\n  --"+name+"\n") {
			t.Errorf("serve --help lacks --%s", name)
		}
	}
}

// serve --help says what --workers bounds: the CPU lanes, not decoding
// or encoding, which are stages of their own (package sched).
func TestServeHelpWorkers(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseServe([]string{"--help"}, &out, env(nil)); err != flag.ErrHelp {
		t.Fatalf("error %v, want flag.ErrHelp", err)
	}
	_, entry, _ := strings.Cut(out.String(), "\n  --workers ")
	entry, _, _ = strings.Cut(entry, "\n  --")
	for _, want := range []string{"CPU lanes", "Decoding and PNG encoding are stages of their own, not lanes"} {
		if !strings.Contains(entry, want) {
			t.Errorf("serve --help's --workers %q lacks %q", entry, want)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"serve", "--bogus"},
		{"serve", "--listen", "http://127.0.0.1:1"},
		{"serve", "--log-level", "loud"},
		{"serve", "extra"},
		{"health", "--endpoint", "http://127.0.0.1:1"},
		{"health", "--endpoint", "grpc://127.0.0.1"},
		{"health", "--bogus"},
		{"health", "extra"},
		{"discover", "--bogus"},
		{"bench", "--endpoint", "tcp://127.0.0.1:1"},
		{"bench", "--streams", "0"},
		{"bench", "--endpoint", "grpc+unix://tmp/pixelflight.sock"},
		{"health", "--endpoint", "grpc+unix://tmp/pixelflight.sock"},
		{"serve", "--listen", "grpc+unix://tmp/pixelflight.sock"},
		{"serve", "--drain-timeout", "0"},
		{"version", "--bogus"},
		{"version", "-v"},
		{"version", "extra"},
		{"--version", "--bogus"},
	} {
		var out, errOut bytes.Buffer
		code := Main(args, "x", &out, &errOut, env(nil))
		if code != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, the error", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	Main([]string{"health", "--endpoint", "http://127.0.0.1:1"}, "x", &out, &errOut, env(nil))
	if !strings.Contains(errOut.String(), "want grpc+unix:///path.sock or grpc://host:port") {
		t.Errorf("bad scheme: stderr %q does not say what it wants", errOut.String())
	}
}

// docs/configure.md's flag table lists every flag serve has.
func TestDocListsEveryServeFlag(t *testing.T) {
	readme, err := os.ReadFile("../docs/configure.md")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := parseServe([]string{"--help"}, &out, env(nil)); err != flag.ErrHelp {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z-]+)`).FindAllStringSubmatch(out.String(), -1) {
		if !regexp.MustCompile("(?m)^\\| [^|]*`--" + m[1] + "`").Match(readme) {
			t.Errorf("docs/configure.md's flag table lacks --%s", m[1])
		}
	}
}
