//go:build !cuda || !cgo

package cuda

import (
	"errors"
	"testing"
)

func TestOpenWithoutTheCUDABuild(t *testing.T) {
	if _, err := Open(Config{}); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Open = %v, want ErrNotBuilt", err)
	}
}
