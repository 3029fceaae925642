//go:build !cuda || !cgo

package cuda

// Built reports whether this binary has the CUDA backend: false in the
// default build, which links nothing of CUDA and runs on any machine.
const Built = false

// Open returns ErrNotBuilt: this binary has no CUDA backend. On a GPU
// node, `pixelflight serve --backend auto` runs pixelflight-cuda instead
// (see Select).
func Open(Config) (*Backend, error) { return nil, ErrNotBuilt }

// DeviceCount returns ErrNotBuilt.
func DeviceCount() (int, error) { return 0, ErrNotBuilt }
