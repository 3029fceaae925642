package main

import (
	"bytes"
	"os"
	"testing"
)

const shipped = "../../python/pixelflight/params.json"

// The client's copy is the registry's: regenerate it when an op's params change.
func TestShippedSchemaMatchesRegistry(t *testing.T) {
	s, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := Write(&want, s); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s differs from the registry's params: run `go run ./tools/paramschema > python/pixelflight/params.json`", shipped)
	}
	if len(s["fft_convolve"]) == 0 || len(s["echo"]) != 0 {
		t.Errorf("schema = %v: want fft_convolve's params and none for echo", s)
	}
}
