package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pixelflight/pixelflight/kernels/fft"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/server"
	"github.com/pixelflight/pixelflight/udf"
)

const usage = `pixelflight: image kernels for Spark over Arrow Flight

Usage:
  pixelflight serve [flags]   serve Flight on a Unix socket or TCP (flags: pixelflight serve -h)
  pixelflight version         print the version
`

// Main runs the command line and returns the exit code.
func Main(args []string, version string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], version, stderr, getenv)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "pixelflight %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "pixelflight: unknown command %q\n\n%s", args[0], usage)
	return 2
}

type serveFlags struct {
	listen, logFormat, logLevel string
	cascadeDir                  string
	exitWithParent              bool
	workers, maxKernel          int
	maxPixels                   int64
	maxMessage                  int
	drain                       time.Duration
}

// DefaultListen is the default location: a Unix socket in the temp dir.
func DefaultListen() string {
	return "grpc+unix://" + filepath.Join(os.TempDir(), "pixelflight.sock")
}

func parseServe(args []string, stderr io.Writer, getenv func(string) string) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lim := udf.DefaultLimits()
	fs.StringVar(&f.listen, "listen", DefaultListen(), "location: grpc+unix:///path.sock (mode 0600) or grpc://host:port (empty host: 127.0.0.1)")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "CPU worker goroutines (default: the CPUs this process may use, container limits included)")
	fs.Int64Var(&f.maxPixels, "max-pixels", lim.MaxPixels, "largest image in pixels, checked from the header before decoding")
	fs.IntVar(&f.maxKernel, "max-kernel", lim.MaxKernelSide, "largest kernel side")
	fs.IntVar(&f.maxMessage, "max-message-bytes", 256<<20, "largest gRPC message accepted")
	fs.StringVar(&f.cascadeDir, "cascade-dir", "", "directories of OpenCV Haar cascade XML files for detect_faces, searched before "+haar.DebianDir+" (separated by "+string(os.PathListSeparator)+"); requests name a cascade, never a path")
	fs.BoolVar(&f.exitWithParent, "exit-with-parent", false, "stop (draining, as on SIGTERM) when the process that started this one exits; the Spark executor plugin sets it so that no sidecar outlives its executor")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long open streams may finish")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: pixelflight serve [flags]\n\nEvery flag can also be set by an environment variable: --max-pixels by PIXELFLIGHT_MAX_PIXELS, and so on; a flag on the command line wins.\n\n")
		fs.PrintDefaults()
	}
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		name := "PIXELFLIGHT_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v := getenv(name); v != "" && envErr == nil {
			if err := fl.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	if envErr != nil {
		return f, envErr
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.logFormat != "json" && f.logFormat != "console" {
		return f, fmt.Errorf("--log-format %q: want json or console", f.logFormat)
	}
	if f.maxPixels < 1 || f.maxKernel < 1 || f.maxMessage < 1<<20 {
		return f, fmt.Errorf("--max-pixels and --max-kernel must be positive, --max-message-bytes at least 1 MiB")
	}
	return f, nil
}

func newLogger(format, level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var e zapcore.Encoder = zapcore.NewJSONEncoder(enc)
	if format == "console" {
		e = zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	}
	return zap.New(zapcore.NewCore(e, zapcore.AddSync(w), lvl)), nil
}

func serve(args []string, version string, stderr io.Writer, getenv func(string) string) int {
	f, err := parseServe(args, stderr, getenv)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "pixelflight serve: %v\n", err)
		return 2
	}
	log, err := newLogger(f.logFormat, f.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "pixelflight serve: %v\n", err)
		return 2
	}
	defer log.Sync() //nolint:errcheck // nothing to do if stderr fails

	var dirs []string
	if f.cascadeDir != "" {
		dirs = filepath.SplitList(f.cascadeDir)
	}
	if _, err := os.Stat(haar.DebianDir); err == nil {
		dirs = append(dirs, haar.DebianDir)
	}
	cascades, err := haar.OpenLibrary(dirs...)
	if err != nil {
		log.Error("cannot read the cascade directories", zap.Error(err))
		return 1
	}
	l, location, err := server.Listen(f.listen)
	if err != nil {
		log.Error("cannot listen", zap.Error(err))
		return 1
	}
	srv := server.New(server.Config{
		Version:         version,
		Limits:          udf.Limits{MaxPixels: f.maxPixels, MaxKernelSide: f.maxKernel},
		Workers:         f.workers,
		MaxMessageBytes: f.maxMessage,
		DrainTimeout:    f.drain,
		Log:             log,
		Cascades:        cascades,
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if f.exitWithParent {
		go watchParent(ctx, cancel, log)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs
		log.Info("signal: draining open streams, refusing new ones", zap.String("signal", s.String()))
		cancel()
		s = <-sigs
		log.Warn("second signal: exiting now", zap.String("signal", s.String()))
		os.Exit(1)
	}()

	log.Info("serving", zap.String("location", location), zap.String("version", version),
		zap.String("backend", "cpu"), zap.Bool("fft_avx2", fft.Vectorized()), zap.Int("workers", f.workers), zap.Int64("max_pixels", f.maxPixels), zap.Int("cascades", len(cascades.Names())))
	if err := srv.Serve(ctx, l); err != nil {
		log.Error("stopped with error", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
}

// watchParent cancels ctx once this process's parent has exited (the
// process is then re-parented, so its parent pid changes).
func watchParent(ctx context.Context, cancel context.CancelFunc, log *zap.Logger) {
	ppid := os.Getppid()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid {
				log.Info("parent exited: draining open streams, refusing new ones", zap.Int("parent", ppid))
				cancel()
				return
			}
		}
	}
}
