//go:build race

package imageio

// allocScale is how much more the race detector's build allocates where
// the decoders grow a bytes.Buffer: with instrumentation on, the compiler
// does not fuse append(nil, make(...)...) in bytes.growSlice, so each
// growth allocates twice.
const allocScale = 2
