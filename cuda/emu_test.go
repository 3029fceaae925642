//go:build cgo

package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/pixelflight/pixelflight/cuda/gpukernels"
	"github.com/pixelflight/pixelflight/imageio"
)

// emuDevice is a device whose kernels are kernels.cu.h compiled for the CPU
// (package gpukernels) and whose FFTs are plain DFTs in float64 with cuFFT's
// layouts: the whole GPU pipeline minus cuFFT and the driver, on any
// machine. fail, when set, is asked before each operation and its error
// returned, as a GPU's would be.
type emuDevice struct {
	free int64
	fail func(op string) error
	// jpegs: it has a JPEG decoder (emuJPEG), as a GPU with nvJPEG.
	jpegs bool

	mu  sync.Mutex
	mem map[devPtr]*gpukernels.Memory
}

var _ device = (*emuDevice)(nil)

func newEmuDevice(free int64) *emuDevice {
	return &emuDevice{free: free, mem: map[devPtr]*gpukernels.Memory{}}
}

func (d *emuDevice) name() string                           { return "emulated (kernels.cu.h on the CPU)" }
func (d *emuDevice) memory() (free, total int64, err error) { return d.free, d.free, nil }
func (d *emuDevice) newStream() (stream, error)             { return &emuStream{d: d}, nil }
func (d *emuDevice) jpeg() (jpegInfo, error) {
	if d.jpegs {
		return jpegInfo{desc: "emulated (the host's decoder into device memory; refuses progressive JPEGs and restart intervals)", hardware: true}, nil
	}
	return jpegInfo{}, errors.New("an emulated device without a JPEG decoder")
}
func (d *emuDevice) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.mem) != 0 {
		return fmt.Errorf("emu: %d device allocations not freed", len(d.mem))
	}
	return nil
}

// view returns the n bytes of device memory at p, which must lie within
// one allocation (an out-of-bounds access on a GPU).
func (d *emuDevice) view(p devPtr, n int) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for base, m := range d.mem {
		if p >= base && p < base+devPtr(len(m.Bytes())) {
			off := int(p - base)
			if off+n > len(m.Bytes()) {
				return nil, fmt.Errorf("emu: %d bytes at %#x overrun an allocation of %d (offset %d)", n, p, len(m.Bytes()), off)
			}
			return m.Bytes()[off : off+n], nil
		}
	}
	return nil, fmt.Errorf("emu: %#x is no device memory", p)
}

// newEmu is a Backend on a fresh emulated device with 1 GiB free, closed
// (and its memory checked) when the test ends.
func newEmu(t testing.TB, cfg Config) *Backend {
	t.Helper()
	b, err := newBackend(newEmuDevice(1<<30), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the emulated backend: %v", err)
		}
	})
	return b
}

type emuStream struct{ d *emuDevice }

func (s *emuStream) check(op string) error {
	if s.d.fail != nil {
		return s.d.fail(op)
	}
	return nil
}

func (s *emuStream) bind() (func(), error) { return func() {}, s.check("bind") }

func (s *emuStream) alloc(n int) (devPtr, error) {
	if err := s.check("alloc"); err != nil {
		return 0, err
	}
	m := gpukernels.Alloc(n)
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.d.mem[devPtr(m.Addr())] = m
	return devPtr(m.Addr()), nil
}

func (s *emuStream) free(p devPtr) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	m, ok := s.d.mem[p]
	if !ok {
		return fmt.Errorf("emu: freeing %#x, not allocated", p)
	}
	delete(s.d.mem, p)
	m.Free()
	return nil
}

// Pinned host memory is ordinary memory here.
func (s *emuStream) hostAlloc(n int) ([]byte, error) { return make([]byte, n), s.check("hostAlloc") }
func (s *emuStream) hostFree([]byte) error           { return nil }

func (s *emuStream) upload(dst devPtr, src []byte) error {
	if err := s.check("upload"); err != nil {
		return err
	}
	v, err := s.d.view(dst, len(src))
	if err != nil {
		return err
	}
	copy(v, src)
	return nil
}

func (s *emuStream) download(dst []byte, src devPtr) error {
	if err := s.check("download"); err != nil {
		return err
	}
	v, err := s.d.view(src, len(dst))
	if err != nil {
		return err
	}
	copy(dst, v)
	return nil
}

func (s *emuStream) launch(name string, grid, block dim3, args ...uint64) error {
	if err := s.check("launch " + name); err != nil {
		return err
	}
	return gpukernels.Launch(name, grid, block, args)
}

func (s *emuStream) plan(nh, nw, batch int) (fftPlan, error) {
	if err := s.check("plan"); err != nil {
		return nil, err
	}
	return &dftPlan{s: s, nh: nh, nw: nw, batch: batch}, nil
}

func (s *emuStream) copy(dst, src devPtr, n int) error {
	if err := s.check("copy"); err != nil {
		return err
	}
	from, err := s.d.view(src, n)
	if err != nil {
		return err
	}
	to, err := s.d.view(dst, n)
	if err != nil {
		return err
	}
	copy(to, from)
	return nil
}

func (s *emuStream) jpegDecoder() (jpegDecoder, error) {
	if !s.d.jpegs {
		return nil, nil
	}
	if err := s.check("jpegDecoder"); err != nil {
		return nil, err
	}
	return &emuJPEG{s: s}, nil
}

// emuJPEG stands in for nvJPEG's hardware decoder: it refuses progressive
// JPEGs, and, to stand for whatever else a GPU decoder may refuse, those
// with restart intervals (a DRI marker); it decodes the others with the
// host's decoder (their Y plane, as NVJPEG_OUTPUT_Y) into device memory,
// and fails the whole batch when one is corrupt, as nvjpegDecodeBatched
// does. It counts what it decoded.
type emuJPEG struct {
	s       *emuStream
	decoded int
	batches int
}

func (j *emuJPEG) supported(b []byte) bool {
	return !bytes.Contains(b, []byte{0xff, 0xc2}) && !bytes.Contains(b, []byte{0xff, 0xdd})
}

func (j *emuJPEG) decode(jpegs [][]byte, dst []devPtr, pitch []int) error {
	j.batches++
	if err := j.s.check("jpeg decode"); err != nil {
		return err
	}
	var g imageio.Gray
	for i, b := range jpegs {
		if err := imageio.DecodeGray(b, imageio.Limits{MaxPixels: 1 << 30}, &g); err != nil {
			return fmt.Errorf("emu jpeg: image %d of %d: %w", i, len(jpegs), err)
		}
		v, err := j.s.d.view(dst[i], pitch[i]*(g.H-1)+g.W)
		if err != nil {
			return err
		}
		for y := range g.H {
			copy(v[y*pitch[i]:y*pitch[i]+g.W], g.Pix[y*g.W:(y+1)*g.W])
		}
	}
	j.decoded += len(jpegs)
	if err := j.s.sync(); err != nil {
		return fmt.Errorf("%w: %w", errStream, err)
	}
	return nil
}

func (j *emuJPEG) close() error { return nil }

func (s *emuStream) sync() error  { return s.check("sync") }
func (s *emuStream) close() error { return nil }

// dftPlan is cuFFT's batched 2D R2C/C2R (unnormalised; out-of-place;
// the real array nh×nw, the complex one nh×(nw/2+1) interleaved float32
// pairs) as direct DFTs in float64.
type dftPlan struct {
	s             *emuStream
	nh, nw, batch int
}

func (p *dftPlan) destroy() error { return nil }

func twiddles(n int) (c, s []float64) {
	c, s = make([]float64, n), make([]float64, n)
	for i := range n {
		s[i], c[i] = math.Sincos(-2 * math.Pi * float64(i) / float64(n))
	}
	return c, s
}

func getF32(b []byte, i int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}
func putF32(b []byte, i int, v float64) {
	binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
}

func (p *dftPlan) forward(in, out devPtr) error {
	if err := p.s.check("fft forward"); err != nil {
		return err
	}
	nh, nw, cw := p.nh, p.nw, p.nw/2+1
	src, err := p.s.d.view(in, p.batch*nh*nw*4)
	if err != nil {
		return err
	}
	dst, err := p.s.d.view(out, p.batch*nh*cw*8)
	if err != nil {
		return err
	}
	hc, hs := twiddles(nh)
	wc, ws := twiddles(nw)
	re, im := make([]float64, nh*cw), make([]float64, nh*cw)
	for b := range p.batch {
		a := src[b*nh*nw*4:]
		// Rows: real to half spectrum.
		for y := range nh {
			for k := range cw {
				var sr, si float64
				for x := range nw {
					v := getF32(a, y*nw+x)
					t := (k * x) % nw
					sr += v * wc[t]
					si += v * ws[t]
				}
				re[y*cw+k], im[y*cw+k] = sr, si
			}
		}
		// Columns: complex DFT.
		o := dst[b*nh*cw*8:]
		for k := range cw {
			for v := range nh {
				var sr, si float64
				for y := range nh {
					t := (v * y) % nh
					xr, xi := re[y*cw+k], im[y*cw+k]
					sr += xr*hc[t] - xi*hs[t]
					si += xr*hs[t] + xi*hc[t]
				}
				putF32(o, 2*(v*cw+k), sr)
				putF32(o, 2*(v*cw+k)+1, si)
			}
		}
	}
	return nil
}

func (p *dftPlan) inverse(in, out devPtr) error {
	if err := p.s.check("fft inverse"); err != nil {
		return err
	}
	nh, nw, cw := p.nh, p.nw, p.nw/2+1
	src, err := p.s.d.view(in, p.batch*nh*cw*8)
	if err != nil {
		return err
	}
	dst, err := p.s.d.view(out, p.batch*nh*nw*4)
	if err != nil {
		return err
	}
	hc, hs := twiddles(nh)
	wc, ws := twiddles(nw)
	re, im := make([]float64, nh*cw), make([]float64, nh*cw)
	for b := range p.batch {
		a := src[b*nh*cw*8:]
		// Columns: inverse complex DFT (conjugate twiddles).
		for k := range cw {
			for y := range nh {
				var sr, si float64
				for v := range nh {
					t := (v * y) % nh
					xr, xi := getF32(a, 2*(v*cw+k)), getF32(a, 2*(v*cw+k)+1)
					sr += xr*hc[t] + xi*hs[t]
					si += xi*hc[t] - xr*hs[t]
				}
				re[y*cw+k], im[y*cw+k] = sr, si
			}
		}
		// Rows: half spectrum to real, the missing half the conjugate of
		// the given; imaginary parts of the DC and Nyquist terms ignored.
		o := dst[b*nh*nw*4:]
		for y := range nh {
			for x := range nw {
				s := re[y*cw]
				for k := 1; k < cw; k++ {
					t := (k * x) % nw
					term := re[y*cw+k]*wc[t] + im[y*cw+k]*ws[t] // Re(Y·e^{+2πikx/nw})
					if 2*k == nw {
						s += term
					} else {
						s += 2 * term
					}
				}
				putF32(o, y*nw+x, s)
			}
		}
	}
	return nil
}

// errInjected is a fault the tests inject, standing for a GPU's
// CUDA_ERROR_LAUNCH_FAILED.
var errInjected = errors.New("CUDA_ERROR_LAUNCH_FAILED (injected)")
