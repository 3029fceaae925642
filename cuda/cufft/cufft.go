//go:build cgo

package cufft

/*
#cgo CFLAGS: -I${SRCDIR}/../../internal/dl
#cgo LDFLAGS: -ldl
#include "dl.h"
#include <stdint.h>
#include <stdlib.h>

// The cuFFT API as used here: cufftHandle is an int, cufftType and
// cufftResult are int enums, a stream is a pointer.
typedef struct {
	int (*planMany)(int *, int, int *, int *, int, int, int *, int, int, int, int);
	int (*setStream)(int, void *);
	int (*execR2C)(int, void *, void *);
	int (*execC2R)(int, void *, void *);
	int (*destroy)(int);
	int (*getVersion)(int *);
} pf_cufft;

static int pf_cufft_open(const char *soname, pf_cufft *l, char *msg, size_t n) {
	const char *const names[] = {"cufftPlanMany", "cufftSetStream", "cufftExecR2C", "cufftExecC2R", "cufftDestroy", "cufftGetVersion"};
	void *fns[6];
	if (dl_open(soname, names, fns, 6, msg, n) == NULL) {
		return -1;
	}
	l->planMany = (int (*)(int *, int, int *, int *, int, int, int *, int, int, int, int))fns[0];
	l->setStream = (int (*)(int, void *))fns[1];
	l->execR2C = (int (*)(int, void *, void *))fns[2];
	l->execC2R = (int (*)(int, void *, void *))fns[3];
	l->destroy = (int (*)(int))fns[4];
	l->getVersion = (int (*)(int *))fns[5];
	return 0;
}

// cgo cannot call function pointers; these small wrappers do. pf_plan
// makes a plan of batch nh x nw transforms of type t on stream s, or
// none.
static int pf_plan(const pf_cufft *l, int *p, int nh, int nw, int batch, int t, uintptr_t s) {
	int n[2] = {nh, nw};
	int r = l->planMany(p, 2, n, NULL, 1, 0, NULL, 1, 0, t, batch);
	if (r != 0) {
		return r;
	}
	r = l->setStream(*p, (void *)s);
	if (r != 0) {
		l->destroy(*p);
	}
	return r;
}
static int pf_r2c(const pf_cufft *l, int p, uintptr_t in, uintptr_t out) { return l->execR2C(p, (void *)in, (void *)out); }
static int pf_c2r(const pf_cufft *l, int p, uintptr_t in, uintptr_t out) { return l->execC2R(p, (void *)in, (void *)out); }
static int pf_destroy(const pf_cufft *l, int p) { return l->destroy(p); }
static int pf_version(const pf_cufft *l) {
	int v = 0;
	return l->getVersion(&v) == 0 ? v : -1;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/pixelflight/pixelflight/internal/dl"
)

// Lib is an opened cuFFT. It is never closed; plans of one Lib may be used
// from any goroutine, each plan by one at a time.
type Lib struct {
	fns     C.pf_cufft
	Soname  string // what was opened
	Version int    // cufftGetVersion: 11xxx or 12xxx
}

// Plan is a batched 2D transform's handle.
type Plan C.int

// Transform types (cufftType).
const (
	R2C = 0x2a
	C2R = 0x2c
)

// Sonames are the cuFFTs to try, in order, under a driver of CUDA version
// driver (cuDriverGetVersion: 13000 for 13.0).
func Sonames(driver int) []string {
	if driver >= 13000 {
		return []string{"libcufft.so.12", "libcufft.so.11"}
	}
	return []string{"libcufft.so.11"}
}

// Open opens the first of sonames (names or paths) that loads and has
// every function used; its error names each one tried and why not.
func Open(sonames ...string) (*Lib, error) {
	l, err := dl.First(sonames, open)
	if err != nil {
		return nil, fmt.Errorf("cufft: cannot open %s (put the CUDA toolkit's or the nvidia-cufft wheel's lib directory on LD_LIBRARY_PATH): %w",
			strings.Join(sonames, " or "), err)
	}
	return l, nil
}

func open(soname string) (*Lib, error) {
	cs := C.CString(soname)
	defer C.free(unsafe.Pointer(cs))
	l := &Lib{Soname: soname}
	var msg [512]C.char
	if C.pf_cufft_open(cs, &l.fns, &msg[0], C.size_t(len(msg))) != 0 {
		return nil, errors.New(C.GoString(&msg[0]))
	}
	l.Version = int(C.pf_version(&l.fns))
	return l, nil
}

// Plan2D makes a plan of batch nh×nw transforms of type typ (R2C or C2R,
// unnormalised, cuFFT's packed layouts) on stream (a CUstream).
func (l *Lib) Plan2D(nh, nw, batch, typ int, stream uintptr) (Plan, error) {
	var p C.int
	if r := C.pf_plan(&l.fns, &p, C.int(nh), C.int(nw), C.int(batch), C.int(typ), C.uintptr_t(stream)); r != 0 {
		return 0, resultError("plan", int(r))
	}
	return Plan(p), nil
}

// ExecR2C runs a forward plan from device address in to out.
func (l *Lib) ExecR2C(p Plan, in, out uintptr) error {
	if r := C.pf_r2c(&l.fns, C.int(p), C.uintptr_t(in), C.uintptr_t(out)); r != 0 {
		return resultError("exec R2C", int(r))
	}
	return nil
}

// ExecC2R runs an inverse plan from device address in to out.
func (l *Lib) ExecC2R(p Plan, in, out uintptr) error {
	if r := C.pf_c2r(&l.fns, C.int(p), C.uintptr_t(in), C.uintptr_t(out)); r != 0 {
		return resultError("exec C2R", int(r))
	}
	return nil
}

// Destroy frees a plan.
func (l *Lib) Destroy(p Plan) error {
	if r := C.pf_destroy(&l.fns, C.int(p)); r != 0 {
		return resultError("destroy", int(r))
	}
	return nil
}

// resultError names a cufftResult.
func resultError(what string, r int) error {
	names := map[int]string{1: "CUFFT_INVALID_PLAN", 2: "CUFFT_ALLOC_FAILED", 3: "CUFFT_INVALID_TYPE",
		4: "CUFFT_INVALID_VALUE", 5: "CUFFT_INTERNAL_ERROR", 6: "CUFFT_EXEC_FAILED", 7: "CUFFT_SETUP_FAILED",
		8: "CUFFT_INVALID_SIZE", 9: "CUFFT_UNALIGNED_DATA"}
	name, ok := names[r]
	if !ok {
		name = fmt.Sprintf("cufftResult %d", r)
	}
	return fmt.Errorf("cufft %s: %s", what, name)
}
