//go:build cgo

package cufft

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeC stands in for cuFFT: its functions check their arguments as the
// real ones would receive them from this package and make up handles.
const fakeC = `
int cufftGetVersion(int *v) { *v = 11999; return 0; }
int cufftPlanMany(int *p, int rank, int *n, int *inembed, int istride, int idist,
                  int *onembed, int ostride, int odist, int type, int batch) {
	if (rank != 2 || inembed || onembed || istride != 1 || ostride != 1) return 4;
	if (type != 0x2a && type != 0x2c) return 3;
	if (n[0] <= 0 || n[1] <= 0 || batch <= 0) return 8;
	*p = n[0] * 100000 + n[1] * 10 + (type == 0x2c);
	return 0;
}
int cufftSetStream(int p, void *s) { return s == (void *)0x5eed ? 0 : 4; }
int cufftExecR2C(int p, void *in, void *out) { return p % 10 == 0 && in == (void *)0x100 && out == (void *)0x200 ? 0 : 6; }
#ifndef NO_C2R
int cufftExecC2R(int p, void *in, void *out) { return p % 10 == 1 && in == (void *)0x200 && out == (void *)0x100 ? 0 : 6; }
#endif
int cufftDestroy(int p) { return p > 0 ? 0 : 1; }
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
	out := filepath.Join(dir, name)
	args := append([]string{"-shared", "-fPIC", "-o", out, src}, flags...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, b)
	}
	return out
}

func TestSonames(t *testing.T) {
	for driver, want := range map[int][]string{
		12020: {"libcufft.so.11"},
		12090: {"libcufft.so.11"},
		13000: {"libcufft.so.12", "libcufft.so.11"},
		13010: {"libcufft.so.12", "libcufft.so.11"},
	} {
		if got := Sonames(driver); !reflect.DeepEqual(got, want) {
			t.Errorf("driver %d: %v, want %v", driver, got, want)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	good := fakeLib(t, dir, "libcufft.so.11")
	short := fakeLib(t, dir, "libshort.so", "-DNO_C2R")
	missing := filepath.Join(dir, "libcufft.so.12")

	l, err := Open(missing, good)
	if err != nil {
		t.Fatal(err)
	}
	if l.Soname != good || l.Version != 11999 {
		t.Errorf("opened %s version %d, want %s version 11999", l.Soname, l.Version, good)
	}
	_, err = Open(missing, short)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "cufftExecC2R") {
		t.Errorf("want an error naming %s and the missing cufftExecC2R, got %v", missing, err)
	}
}

func TestPlans(t *testing.T) {
	l, err := Open(fakeLib(t, t.TempDir(), "libcufft.so.11"))
	if err != nil {
		t.Fatal(err)
	}
	const stream, in, out = 0x5eed, 0x100, 0x200
	fwd, err := l.Plan2D(512, 520, 8, R2C, stream)
	if err != nil || fwd != 51205200 {
		t.Fatalf("R2C plan %d, %v; want 51205200", fwd, err)
	}
	inv, err := l.Plan2D(512, 520, 8, C2R, stream)
	if err != nil || inv != 51205201 {
		t.Fatalf("C2R plan %d, %v; want 51205201", inv, err)
	}
	if err := l.ExecR2C(fwd, in, out); err != nil {
		t.Error(err)
	}
	if err := l.ExecC2R(inv, out, in); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"stream", second(l.Plan2D(8, 8, 1, R2C, 0x1)), "cufft plan: CUFFT_INVALID_VALUE"},
		{"type", second(l.Plan2D(8, 8, 1, 0x29, stream)), "cufft plan: CUFFT_INVALID_TYPE"},
		{"size", second(l.Plan2D(8, 0, 1, R2C, stream)), "cufft plan: CUFFT_INVALID_SIZE"},
		{"exec", l.ExecC2R(fwd, out, in), "cufft exec C2R: CUFFT_EXEC_FAILED"},
		{"destroy", l.Destroy(0), "cufft destroy: CUFFT_INVALID_PLAN"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.what, c.err, c.want)
		}
	}
	if err := l.Destroy(fwd); err != nil {
		t.Error(err)
	}
}

func second[T any](_ T, err error) error { return err }
