package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlagSet returns a flag set that prints nothing itself: parseArgs
// prints the help, and each command reports its own errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args into fs. Asked for help (-h, --help), it writes
// head and the flags to help (stdout) and returns flag.ErrHelp; arguments
// that are not flags are an error.
func parseArgs(fs *flag.FlagSet, head string, args []string, help io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(help, head, fs)
		return flag.ErrHelp
	}
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// usageError is the exit code for a command whose flags did not parse:
// 0 after help, else 2, with the error and a pointer to the help on stderr.
func usageError(cmd string, err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "pixelflight %s: %v\n(pixelflight %s --help lists the flags)\n", cmd, err, cmd)
	return 2
}

// printUsage writes head, then each flag of fs as --name, its type, its
// description and its default.
func printUsage(w io.Writer, head string, fs *flag.FlagSet) {
	var b strings.Builder
	b.WriteString(head)
	fs.VisitAll(func(fl *flag.Flag) {
		typ, usage := flag.UnquoteUsage(fl)
		fmt.Fprintf(&b, "  --%s", fl.Name)
		if typ != "" {
			fmt.Fprintf(&b, " %s", typ)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch fl.DefValue {
		case "", "0", "false", "0s":
		default:
			if typ == "string" {
				fmt.Fprintf(&b, " (default %q)", fl.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %s)", fl.DefValue)
			}
		}
		b.WriteString("\n")
	})
	io.WriteString(w, b.String()) //nolint:errcheck // nothing to do if stdout fails
}
