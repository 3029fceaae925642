// Command pixelflight is the image-kernel sidecar for Spark. See package cli.
package main

import (
	"os"

	"github.com/pixelflight/pixelflight/cli"
)

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(cli.Main(os.Args[1:], version, os.Stdout, os.Stderr, os.Getenv))
}
