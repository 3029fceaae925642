package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/pixelflight/pixelflight/gpu"
)

// One image, CPU-only and GPU nodes: it ships two binaries side by side,
// pixelflight (the default build: no CUDA linked, starts anywhere) and
// pixelflight-cuda (-tags cuda: links libcuda.so.1, so the dynamic
// loader refuses to start it where there is no driver, and
// gorgonia.org/cu exits in its init when cuInit fails; it opens cuFFT at
// run time, libcufft.so.12 or .11 by the driver's CUDA version).
// `pixelflight serve --backend auto` (the default) looks with NVML for a
// GPU this process may use and, when there is one and pixelflight-cuda
// lies next to it and starts (`pixelflight-cuda version`, run first as a
// child), replaces itself with `pixelflight-cuda serve` and the same
// arguments and environment (execve: same pid, so the Spark plugin's and
// Kubernetes' view of the process is unchanged). Otherwise it serves on
// the CPU and logs why.

// SiblingName is the CUDA build's file name, next to the default binary.
const SiblingName = "pixelflight-cuda"

// ExecEnv is set in the environment of a pixelflight-cuda that auto
// started, so that it never starts another.
const ExecEnv = "PIXELFLIGHT_CUDA_EXEC"

// Facts are what the choice of backend depends on (Gather reads them;
// tests make them up).
type Facts struct {
	Backend  string       // --backend: auto, cpu or cuda
	Built    bool         // this binary has the CUDA backend
	GPUs     []gpu.Device // NVML's devices, narrowed by CUDA_VISIBLE_DEVICES
	ProbeErr error        // NVML's error (wrapping gpu.ErrNoDriver without a driver)
	Sibling  string       // path of an executable pixelflight-cuda next to this binary, or ""
	Execed   bool         // this process is an exec from auto
	// Preflight starts pixelflight-cuda once (`version`) and reports
	// whether it ran; asked only when everything else says exec.
	Preflight func() error
}

// Choice is what serve does.
type Choice struct {
	Exec   string // exec this pixelflight-cuda; else serve here
	Open   bool   // open the CUDA backend in this process
	Reason string // for the log
	Err    error  // --backend cuda that cannot be had: do not serve
}

// ErrUnavailable is the error of --backend cuda where no GPU backend can
// run.
var ErrUnavailable = errors.New("--backend cuda: no GPU backend here")

// Choose decides between the CPU, the CUDA backend in this process, and
// exec'ing pixelflight-cuda.
func Choose(f Facts) Choice {
	no := func(reason string) Choice {
		c := Choice{Reason: reason + ": serving on the CPU"}
		if f.Backend == "cuda" {
			c.Err = fmt.Errorf("%w: %s", ErrUnavailable, reason)
		}
		return c
	}
	switch {
	case f.Backend == "cpu":
		return Choice{Reason: "--backend cpu: serving on the CPU"}
	case f.Built:
		return Choice{Open: true, Reason: "this is the CUDA build: opening the GPU backend"}
	case f.ProbeErr != nil && errors.Is(f.ProbeErr, gpu.ErrNoDriver):
		return no("no NVIDIA driver")
	case f.ProbeErr != nil:
		return no("NVML failed (" + f.ProbeErr.Error() + ")")
	case len(f.GPUs) == 0:
		return no("the driver shows no GPU this process may use (CUDA_VISIBLE_DEVICES)")
	case f.Execed:
		return no("already exec'd from " + SiblingName + " once")
	case f.Sibling == "":
		return no(fmt.Sprintf("%d GPU(s) found, but this binary has no GPU backend and no %s lies next to it", len(f.GPUs), SiblingName))
	}
	if f.Preflight != nil {
		if err := f.Preflight(); err != nil {
			return no(fmt.Sprintf("%d GPU(s) found, but %s cannot start here (%v)", len(f.GPUs), f.Sibling, err))
		}
	}
	return Choice{Exec: f.Sibling, Reason: fmt.Sprintf("%d GPU(s) found (%s): running %s", len(f.GPUs), f.GPUs[0].Name, f.Sibling)}
}

// Gather reads the facts for backend from this machine: NVML, the
// binary's directory, the environment.
func Gather(backend string) Facts {
	f := Facts{Backend: backend, Built: Built, Execed: os.Getenv(ExecEnv) != ""}
	if backend == "cpu" || Built {
		return f
	}
	f.GPUs, f.ProbeErr = gpu.Probe()
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), SiblingName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			f.Sibling = p
		}
	}
	f.Preflight = func() error { return preflight(f.Sibling) }
	return f
}

// preflight runs `pixelflight-cuda version`: it fails where libcuda.so.1
// is missing or cuInit fails (a missing cuFFT is Open's error, and the
// CUDA build then serves on the CPU and says why).
func preflight(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Env = append(os.Environ(), ExecEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = "..." + msg[len(msg)-300:]
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	return nil
}

// Select is serve's --backend (bench starts serve): it returns the CUDA
// backends to add beside the CPU, one per GPU this process may use
// (CUDA_VISIBLE_DEVICES: every GPU lent to it), none to serve on the CPU
// alone, or an error when --backend cuda cannot be had. A GPU whose
// backend cannot start is left out and logged. When pixelflight-cuda
// should run instead, it execs `pixelflight-cuda command args...` and
// does not return (unless the exec fails: then the CPU).
func Select(backend, command string, args []string, cfg Config, log *zap.Logger) ([]*Backend, error) {
	c := Choose(Gather(backend))
	if c.Err != nil {
		return nil, c.Err
	}
	switch {
	case c.Exec != "":
		log.Info("backend: "+c.Reason, zap.String("backend", backend))
		log.Sync() //nolint:errcheck // nothing to do if stderr fails
		argv := append([]string{c.Exec, command}, args...)
		err := syscall.Exec(c.Exec, argv, append(os.Environ(), ExecEnv+"=1"))
		log.Warn("backend: exec failed: serving on the CPU", zap.String("path", c.Exec), zap.Error(err))
		return nil, nil
	case c.Open:
		bs, err := openAll(cfg, log)
		if len(bs) == 0 {
			if backend == "cuda" {
				return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			log.Warn("backend: the GPU backend cannot start: serving on the CPU", zap.Error(err))
			return nil, nil
		}
		for _, b := range bs {
			jpeg, _ := b.Decoder()
			log.Info("backend: "+c.Reason, zap.String("backend", b.Name()), zap.String("device", b.Device()), zap.Int("lanes", b.Lanes()),
				zap.Int("max_batch", b.MaxBatch()), zap.String("jpeg_decoder", jpeg))
		}
		return bs, nil
	}
	log.Info("backend: "+c.Reason, zap.String("backend", backend))
	return nil, nil
}

// openAll opens a backend on each GPU this process may use; it returns
// those that opened and the errors of the others (logged).
func openAll(cfg Config, log *zap.Logger) ([]*Backend, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	var bs []*Backend
	var errs []error
	for i := range n {
		c := cfg
		c.Device = i
		b, err := Open(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
			log.Warn("backend: a GPU's backend cannot start: leaving it out", zap.Int("device", i), zap.Error(err))
			continue
		}
		bs = append(bs, b)
	}
	return bs, errors.Join(errs...)
}
