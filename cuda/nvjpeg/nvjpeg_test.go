//go:build cgo

package nvjpeg

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// fakeC stands in for nvJPEG: its functions check their arguments as the
// real ones would receive them from this package, with the types of
// nvjpeg_api.h. A stand-in JPEG (see jpeg) carries what the calls on it
// must receive: FF D8, a kind, width, height, and for DecodeBatched its
// pitch, destination, length, the number of batch initialisations so far
// and their max_cpu_threads.
const fakeC = `
#include "nvjpeg_api.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OK, NOT_INITIALIZED, INVALID_PARAMETER, BAD_JPEG, JPEG_NOT_SUPPORTED, ALLOCATOR_FAILURE,
       EXECUTION_FAILED, ARCH_MISMATCH, INTERNAL_ERROR, IMPLEMENTATION_NOT_SUPPORTED };
#define MAGIC 0x6a706567

struct nvjpegHandle { int magic; unsigned int backend; };
struct nvjpegJpegState { int magic; struct nvjpegHandle *h; int batch, threads, inits; };
struct nvjpegJpegStream { int magic; struct nvjpegHandle *h; int kind; };

static unsigned get(const unsigned char *p, int n) {
	unsigned v = 0;
	for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
	return v;
}
static int valid(const struct nvjpegHandle *h) { return h && h->magic == MAGIC; }
static int bad(const unsigned char *d, size_t n) { return !d || n < 25 || d[0] != 0xff || d[1] != 0xd8 || get(d + 19, 4) != n; }

unsigned int nvjpegGetProperty(unsigned int type, int *v) {
	const int version[] = {12, 9, 3};
	if (type > 2 || !v) return INVALID_PARAMETER;
	*v = version[type];
	return OK;
}
unsigned int nvjpegCreateEx(unsigned int backend, void *dev, void *pinned, unsigned int flags, struct nvjpegHandle **h) {
	if (backend > 6 || dev || pinned || flags || !h) return INVALID_PARAMETER;
#ifdef NO_HW
	if (backend == 3) return ARCH_MISMATCH;
#endif
	*h = calloc(1, sizeof **h);
	(*h)->magic = MAGIC;
	(*h)->backend = backend;
	return OK;
}
unsigned int nvjpegDestroy(struct nvjpegHandle *h) {
	if (!valid(h)) return INVALID_PARAMETER;
	h->magic = 0; // not freed: a second destroy fails
	return OK;
}
unsigned int nvjpegGetHardwareDecoderInfo(struct nvjpegHandle *h, unsigned int *engines, unsigned int *cores) {
	if (!valid(h) || !engines || !cores) return INVALID_PARAMETER;
	*engines = h->backend == 3 ? 7 : 0;
	*cores = h->backend == 3 ? 5 : 0;
	return OK;
}
unsigned int nvjpegJpegStateCreate(struct nvjpegHandle *h, struct nvjpegJpegState **s) {
	if (!valid(h) || !s) return INVALID_PARAMETER;
	*s = calloc(1, sizeof **s);
	(*s)->magic = MAGIC;
	(*s)->h = h;
	return OK;
}
unsigned int nvjpegJpegStateDestroy(struct nvjpegJpegState *s) {
	if (!s || s->magic != MAGIC || !valid(s->h)) return INVALID_PARAMETER; // before its handle
	s->magic = 0;
	return OK;
}
unsigned int nvjpegJpegStreamCreate(struct nvjpegHandle *h, struct nvjpegJpegStream **s) {
	if (!valid(h) || !s) return INVALID_PARAMETER;
	*s = calloc(1, sizeof **s);
	(*s)->magic = MAGIC;
	(*s)->h = h;
	return OK;
}
unsigned int nvjpegJpegStreamDestroy(struct nvjpegJpegStream *s) {
	if (!s || s->magic != MAGIC || !valid(s->h)) return INVALID_PARAMETER;
	s->magic = 0;
	return OK;
}
unsigned int nvjpegGetImageInfo(struct nvjpegHandle *h, const unsigned char *d, size_t n, int *components,
                                int *css, int *widths, int *heights) {
	if (!valid(h) || !components || !css || !widths || !heights) return INVALID_PARAMETER;
	if (bad(d, n)) return BAD_JPEG;
	int w = get(d + 3, 2), hh = get(d + 5, 2);
	for (int i = 0; i < PF_NVJPEG_MAX_COMPONENT; i++) widths[i] = heights[i] = 0;
	switch (d[2]) {
	case 'y': // grey
		*components = 1, *css = 6, widths[0] = w, heights[0] = hh;
		return OK;
	case 'c': // 4:2:0 colour
	case 'p': // progressive 4:2:0
		*components = 3, *css = 2, widths[0] = w, heights[0] = hh;
		widths[1] = widths[2] = (w + 1) / 2, heights[1] = heights[2] = (hh + 1) / 2;
		return OK;
	}
	return JPEG_NOT_SUPPORTED;
}
unsigned int nvjpegJpegStreamParse(struct nvjpegHandle *h, const unsigned char *d, size_t n, int save_metadata,
                                   int save_stream, struct nvjpegJpegStream *s) {
	if (!valid(h) || !s || s->magic != MAGIC || s->h != h || save_metadata || save_stream) return INVALID_PARAMETER;
	if (bad(d, n)) return BAD_JPEG;
	s->kind = d[2];
	return OK;
}
unsigned int nvjpegDecodeBatchedSupported(struct nvjpegHandle *h, struct nvjpegJpegStream *s, int *is) {
	if (!valid(h) || !s || s->magic != MAGIC || s->h != h || !s->kind || !is) return INVALID_PARAMETER;
	if (h->backend != 3) return IMPLEMENTATION_NOT_SUPPORTED; // not asked of the others
	*is = s->kind == 'p'; // 0: supported
	return OK;
}
unsigned int nvjpegDecodeBatchedInitialize(struct nvjpegHandle *h, struct nvjpegJpegState *s, int batch,
                                           int threads, unsigned int format) {
	if (!valid(h) || !s || s->magic != MAGIC || s->h != h || batch < 1 || threads < 1 || format != 2) return INVALID_PARAMETER;
	if (batch > 100) return ALLOCATOR_FAILURE;
	s->batch = batch, s->threads = threads, s->inits++;
	return OK;
}
#ifndef NO_BATCHED
unsigned int nvjpegDecodeBatched(struct nvjpegHandle *h, struct nvjpegJpegState *s, const unsigned char *const *data,
                                 const size_t *lengths, pf_nvjpeg_image *dst, struct CUstream_st *stream) {
	if (!valid(h) || !s || s->magic != MAGIC || s->h != h || !data || !lengths || !dst) return INVALID_PARAMETER;
	if (!s->batch) return NOT_INITIALIZED;
	if (stream != (struct CUstream_st *)0x5eed) return INVALID_PARAMETER;
	for (int i = 0; i < s->batch; i++) {
		const unsigned char *d = data[i];
		if (bad(d, lengths[i])) return BAD_JPEG;
		if (d[23] != s->inits || d[24] != s->threads) return INTERNAL_ERROR;
		if (dst[i].pitch[0] != get(d + 7, 4) || (uintptr_t)dst[i].channel[0] != ((uintptr_t)get(d + 15, 4) << 32 | get(d + 11, 4)))
			return INVALID_PARAMETER;
		for (int c = 1; c < PF_NVJPEG_MAX_COMPONENT; c++)
			if (dst[i].channel[c] || dst[i].pitch[c]) return INVALID_PARAMETER;
	}
	for (int i = 0; i < s->batch; i++) {
		if (data[i][2] == 'x') return BAD_JPEG;
		if (data[i][2] == 'e') return EXECUTION_FAILED;
	}
	return OK;
}
#endif
`

// fakeLib compiles fakeC into dir/name with the extra cc flags.
func fakeLib(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte(fakeC), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-shared", "-fPIC", "-I" + here, "-o", out, src}, flags...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, b)
	}
	return out
}

// image is a stand-in JPEG and what DecodeBatched must pass for it.
type image struct {
	kind          byte // y: grey, c: colour, p: progressive colour, x: corrupt data, e: fails on the GPU
	w, h          int
	dst           uintptr
	pitch         int
	inits, thread int // the initialisations so far and their max_cpu_threads when it is decoded
	pad           int // bytes after the header
}

func (m image) jpeg() []byte {
	b := make([]byte, 25+m.pad)
	b[0], b[1], b[2] = 0xff, 0xd8, m.kind
	binary.LittleEndian.PutUint16(b[3:], uint16(m.w))
	binary.LittleEndian.PutUint16(b[5:], uint16(m.h))
	binary.LittleEndian.PutUint32(b[7:], uint32(m.pitch))
	binary.LittleEndian.PutUint64(b[11:], uint64(m.dst))
	binary.LittleEndian.PutUint32(b[19:], uint32(len(b)))
	b[23], b[24] = byte(m.inits), byte(m.thread)
	return b
}

func newDecoder(t *testing.T, b Backend) *Decoder {
	t.Helper()
	l, err := Open(fakeLib(t, t.TempDir(), "libnvjpeg.so.12"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.NewDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestSonames(t *testing.T) {
	for driver, want := range map[int][]string{
		12020: {"libnvjpeg.so.12"},
		12090: {"libnvjpeg.so.12"},
		13000: {"libnvjpeg.so.13", "libnvjpeg.so.12"},
		13010: {"libnvjpeg.so.13", "libnvjpeg.so.12"},
	} {
		if got := Sonames(driver); !reflect.DeepEqual(got, want) {
			t.Errorf("driver %d: %v, want %v", driver, got, want)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	good := fakeLib(t, dir, "libnvjpeg.so.12")
	short := fakeLib(t, dir, "libshort.so", "-DNO_BATCHED")
	missing := filepath.Join(dir, "libnvjpeg.so.13")

	l, err := Open(missing, good)
	if err != nil {
		t.Fatal(err)
	}
	if l.Soname != good || l.Version != [3]int{12, 9, 3} {
		t.Errorf("opened %s version %v, want %s version [12 9 3]", l.Soname, l.Version, good)
	}
	_, err = Open(missing, short)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "nvjpegDecodeBatched") ||
		!strings.Contains(err.Error(), "nvidia-nvjpeg") {
		t.Errorf("want an error naming %s, the missing nvjpegDecodeBatched and the wheel, got %v", missing, err)
	}
	if _, err := Open(); err == nil {
		t.Error("Open() opened something")
	}
}

func TestNewDecoder(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(fakeLib(t, dir, "libnvjpeg.so.12"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b                    Backend
		engines, coresPerEng int
	}{{Default, 0, 0}, {Hybrid, 0, 0}, {GPUHybrid, 0, 0}, {Hardware, 7, 5}} {
		d, err := l.NewDecoder(c.b)
		if err != nil {
			t.Fatalf("%v: %v", c.b, err)
		}
		if d.Backend() != c.b {
			t.Errorf("Backend() %v, want %v", d.Backend(), c.b)
		}
		// The fake's engines are those of a handle of the hardware backend.
		e, k, err := d.HardwareEngines()
		if err != nil || e != c.engines || k != c.coresPerEng {
			t.Errorf("%v: HardwareEngines %d, %d, %v; want %d, %d", c.b, e, k, err, c.engines, c.coresPerEng)
		}
		if err := d.Close(); err != nil {
			t.Errorf("%v: Close: %v", c.b, err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("%v: second Close: %v", c.b, err)
		}
		if _, _, err := d.HardwareEngines(); err == nil {
			t.Errorf("%v: HardwareEngines after Close: no error", c.b)
		}
	}
	if _, err := l.NewDecoder(Backend(5)); err == nil {
		t.Error("NewDecoder(5) made a decoder")
	}

	noHW, err := Open(fakeLib(t, dir, "libnohw.so", "-DNO_HW"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = noHW.NewDecoder(Hardware)
	var e *Error
	if err == nil || err.Error() != "nvjpeg create: NVJPEG_STATUS_ARCH_MISMATCH" || !errors.As(err, &e) || e.Status != StatusArchMismatch {
		t.Errorf("hardware backend without JPEG engines: %v, want nvjpeg create: NVJPEG_STATUS_ARCH_MISMATCH", err)
	}
}

func TestInfo(t *testing.T) {
	d := newDecoder(t, Default)
	for _, c := range []struct {
		m    image
		want Info
	}{
		{image{kind: 'y', w: 640, h: 480, pad: 100}, Info{Components: 1, Subsampling: CSSGray, W: 640, H: 480}},
		{image{kind: 'c', w: 513, h: 7}, Info{Components: 3, Subsampling: CSS420, W: 513, H: 7}},
	} {
		got, err := d.Info(c.m.jpeg())
		if err != nil || got != c.want {
			t.Errorf("%c: %+v, %v; want %+v", c.m.kind, got, err, c.want)
		}
	}
	for _, c := range []struct {
		jpeg []byte
		want string
	}{
		{image{kind: 'y', w: 8, h: 8}.jpeg()[:24], "nvjpeg get image info: NVJPEG_STATUS_BAD_JPEG"},
		{image{kind: 'z', w: 8, h: 8}.jpeg(), "nvjpeg get image info: NVJPEG_STATUS_JPEG_NOT_SUPPORTED"},
		{nil, "nvjpeg get image info: empty JPEG"},
	} {
		if _, err := d.Info(c.jpeg); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.jpeg, err, c.want)
		}
	}
}

func TestSupported(t *testing.T) {
	baseline := image{kind: 'c', w: 64, h: 64}.jpeg()
	progressive := image{kind: 'p', w: 64, h: 64}.jpeg()
	for _, c := range []struct {
		b                     Backend
		baseline, progressive bool
	}{{Hardware, true, false}, {Default, true, true}, {GPUHybrid, true, true}} {
		d := newDecoder(t, c.b)
		if ok, err := d.Supported(baseline); ok != c.baseline || err != nil {
			t.Errorf("%v: baseline %v, %v; want %v", c.b, ok, err, c.baseline)
		}
		if ok, err := d.Supported(progressive); ok != c.progressive || err != nil {
			t.Errorf("%v: progressive %v, %v; want %v", c.b, ok, err, c.progressive)
		}
		if ok, err := d.Supported(baseline[:20]); ok || err == nil || err.Error() != "nvjpeg jpeg stream parse: NVJPEG_STATUS_BAD_JPEG" {
			t.Errorf("%v: truncated %v, %v; want nvjpeg jpeg stream parse: NVJPEG_STATUS_BAD_JPEG", c.b, ok, err)
		}
	}
}

func TestDecodeBatched(t *testing.T) {
	d := newDecoder(t, Hardware)
	const stream = 0x5eed
	// batch makes n stand-in JPEGs of kind, their destinations and pitches.
	batch := func(n, inits, threads int, kind byte) ([][]byte, []uintptr, []int) {
		var jpegs [][]byte
		var dst []uintptr
		var pitch []int
		for i := range n {
			m := image{kind: kind, w: 100 + i, h: 50, dst: 0x7f00_0000_0000 + uintptr(i)<<20, pitch: 128 + 64*i,
				inits: inits, thread: threads, pad: 1000 * i}
			jpegs, dst, pitch = append(jpegs, m.jpeg()), append(dst, m.dst), append(pitch, m.pitch)
		}
		return jpegs, dst, pitch
	}
	steps := []struct {
		what    string
		n       int
		set     int // SetMaxCPUThreads before, when not 0
		inits   int // the initialisations expected so far
		threads int // and their max_cpu_threads
		kind    byte
		stream  uintptr
		want    string
	}{
		{"first", 3, 0, 1, 1, 'y', stream, ""},
		{"same size", 3, 0, 1, 1, 'c', stream, ""},
		{"bigger", 5, 0, 2, 1, 'y', stream, ""},
		{"smaller", 2, 0, 3, 1, 'y', stream, ""},
		{"same threads", 2, 1, 3, 1, 'y', stream, ""},
		{"more threads", 2, 2, 4, 2, 'y', stream, ""},
		{"bad JPEG", 2, 0, 4, 2, 'x', stream, "nvjpeg decode batched: NVJPEG_STATUS_BAD_JPEG"},
		{"after a failure", 2, 0, 5, 2, 'y', stream, ""},
		{"execution", 2, 0, 5, 2, 'e', stream, "nvjpeg decode batched: NVJPEG_STATUS_EXECUTION_FAILED"},
		{"wrong stream", 2, 0, 6, 2, 'y', 0x1, "nvjpeg decode batched: NVJPEG_STATUS_INVALID_PARAMETER"},
		{"too many", 101, 0, 6, 2, 'y', stream, "nvjpeg decode batched initialize: NVJPEG_STATUS_ALLOCATOR_FAILURE"},
		{"after failing to initialise", 2, 0, 7, 2, 'y', stream, ""},
		{"threads below 1", 2, -3, 8, 1, 'y', stream, ""},
	}
	for _, s := range steps {
		if s.set != 0 {
			d.SetMaxCPUThreads(s.set)
		}
		jpegs, dst, pitch := batch(s.n, s.inits, s.threads, s.kind)
		err := d.DecodeBatched(jpegs, dst, pitch, s.stream)
		if s.want == "" && err != nil || s.want != "" && (err == nil || err.Error() != s.want) {
			t.Errorf("%s: %v, want %q", s.what, err, s.want)
		}
	}

	jpegs, dst, pitch := batch(2, 8, 1, 'y')
	var e *Error
	if err := d.DecodeBatched(jpegs, dst, pitch, 0x1); !errors.As(err, &e) || e.Status != StatusInvalidParameter || e.Op != "decode batched" {
		t.Errorf("errors.As: %#v from %v", e, err)
	}
	for _, c := range []struct {
		what  string
		jpegs [][]byte
		dst   []uintptr
		pitch []int
	}{
		{"lengths", jpegs, dst[:1], pitch},
		{"empty JPEG", [][]byte{jpegs[0], {}}, dst, pitch},
		{"no destination", jpegs, []uintptr{dst[0], 0}, pitch},
		{"no pitch", jpegs, dst, []int{pitch[0], 0}},
	} {
		if err := d.DecodeBatched(c.jpegs, c.dst, c.pitch, stream); err == nil {
			t.Errorf("%s: no error", c.what)
		}
	}
	if err := d.DecodeBatched(nil, nil, nil, stream); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.DecodeBatched(jpegs, dst, pitch, stream); err == nil {
		t.Error("DecodeBatched after Close: no error")
	}
}

// TestDecodeBatchedUnderGC decodes batch after batch of large JPEGs, each
// dropped after its batch, while the collector runs all along: the arrays
// in C memory still hold the last batch's addresses when the next is
// written, and Go's write barrier must never read them as Go pointers
// (it stops the process with "found bad pointer in Go heap" when the
// JPEG they point to was freed).
func TestDecodeBatchedUnderGC(t *testing.T) {
	d := newDecoder(t, Hardware)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	const n = 4
	for i := range 3000 {
		jpegs, dst, pitch := make([][]byte, n), make([]uintptr, n), make([]int, n)
		for k := range n {
			m := image{kind: 'y', w: 64, h: 8, dst: 0x7f00_0000_0000 + uintptr(k)<<20, pitch: 64,
				inits: 1, thread: 1, pad: 40000 + (i*n+k)%17*9000}
			jpegs[k], dst[k], pitch[k] = m.jpeg(), m.dst, m.pitch
		}
		if err := d.DecodeBatched(jpegs, dst, pitch, 0x5eed); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		d.Unpin()
	}
}

func TestStatus(t *testing.T) {
	for s, want := range map[Status]string{
		StatusBadJPEG:             "NVJPEG_STATUS_BAD_JPEG",
		StatusIncompleteBitstream: "NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
		42:                        "nvjpegStatus_t 42",
		-1:                        "nvjpegStatus_t -1",
	} {
		if s.String() != want {
			t.Errorf("Status(%d): %s, want %s", int(s), s, want)
		}
	}
}

// TestWheel opens the real libnvjpeg.so.12 of the nvidia-nvjpeg wheel in
// build/cuda-venv (make cuda-sdk), where it is, for its version and every
// function used; without a GPU its decoder fails, with one it is made.
func TestWheel(t *testing.T) {
	libs, _ := filepath.Glob("../../build/cuda-venv/lib/python3*/site-packages/nvidia/nvjpeg/lib/libnvjpeg.so.12")
	if len(libs) == 0 {
		t.Skip("no nvidia-nvjpeg wheel in build/cuda-venv")
	}
	l, err := Open(libs[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Version[0] != 12 {
		t.Errorf("version %v, want 12.x", l.Version)
	}
	t.Logf("nvJPEG %d.%d.%d", l.Version[0], l.Version[1], l.Version[2])
	d, err := l.NewDecoder(Default)
	if err != nil {
		t.Logf("NewDecoder(Default): %v", err)
		return
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}
