// Command testpki writes testpki's certificates into a directory, for the
// Python tests (tests/test_security.py): go run ./internal/testpki/cmd/testpki DIR.
// It prints the files as JSON.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/pixelflight/pixelflight/internal/testpki"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testpki DIR")
		os.Exit(2)
	}
	f, err := testpki.Write(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testpki:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(f); err != nil {
		fmt.Fprintln(os.Stderr, "testpki:", err)
		os.Exit(1)
	}
}
