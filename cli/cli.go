package cli

import (
	"fmt"
	"io"
	"runtime"
)

const usage = `pixelflight: image kernels for Spark over Arrow Flight

Usage:
  pixelflight serve [flags]     serve Flight on a Unix socket or TCP
  pixelflight health [flags]    ask a running sidecar whether it serves (exit 0: SERVING)
  pixelflight discover [flags]  print Spark's GPU resource JSON
  pixelflight bench [flags]     load a sidecar with N streams: images/s, MB/s, latency
  pixelflight version           print the version

pixelflight COMMAND --help lists a command's flags. Usage errors exit 2.
`

// Main runs the command line and returns the exit code.
func Main(args []string, version string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], version, stdout, stderr, getenv)
	case "health":
		return health(args[1:], stdout, stderr, getenv)
	case "discover":
		return runDiscover(args[1:], stdout, stderr, getenv)
	case "bench":
		return bench(args[1:], version, stdout, stderr, getenv)
	case "version", "--version", "-version":
		return printVersion(args[1:], version, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "pixelflight: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// printVersion is `pixelflight version`: it takes no flags and no
// arguments, but --help.
func printVersion(args []string, version string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version")
	const head = "Usage: pixelflight version\n\nPrints pixelflight's version, the Go version it was built with and its platform, e.g. pixelflight 1.2.3 go1.26.0 linux/amd64. It takes no flags.\n"
	if err := parseArgs(fs, head, args, stdout); err != nil {
		return usageError("version", err, stderr)
	}
	fmt.Fprintf(stdout, "pixelflight %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
