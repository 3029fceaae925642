package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pixelflight/pixelflight/cuda"
	"github.com/pixelflight/pixelflight/gpu"
	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/internal/dial"
	"github.com/pixelflight/pixelflight/internal/memlimit"
	"github.com/pixelflight/pixelflight/internal/unixsock"
	"github.com/pixelflight/pixelflight/kernels/fft"
	"github.com/pixelflight/pixelflight/kernels/haar"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/server"
	"github.com/pixelflight/pixelflight/udf"
)

const serveHead = "Usage: pixelflight serve [flags]\n\nEvery flag can also be set by an environment variable: --max-pixels by PIXELFLIGHT_MAX_PIXELS, and so on; a flag on the command line wins.\n\n"

// DefaultListen is the default location: a Unix socket in a directory
// only this user may enter (unixsock.DefaultPath).
func DefaultListen() string {
	return "grpc+unix://" + unixsock.DefaultPath(os.Getenv)
}

type serveFlags struct {
	listen, logFormat, logLevel string
	metricsListen               string
	metricsLabels               string
	cascadeDir, backend         string
	exitWithParent              bool
	workers, maxKernel          int
	maxBatch                    int
	gpuLanes                    int
	maxPixels, memoryBudget     int64
	memLimit                    int64
	maxMessage                  int
	drain, maxDelay             time.Duration
	sim                         string

	// Transport security: see server.ListenConfig, server.LoadTLS, server.ReadToken.
	tlsCert, tlsKey, tlsClientCA string
	tokenFile                    string
	insecureListenAny            bool

	transport transportFlags // limits on silent connections and streams (transport.go)
}

// parseServe reads serve's flags: those on the command line, then, for
// the others, their variables that are set (even empty, where empty is a
// value: an empty PIXELFLIGHT_METRICS_LISTEN turns metrics off; an empty
// number or duration is as if unset). Asked for help, it
// writes it to help and returns flag.ErrHelp.
func parseServe(args []string, help io.Writer, getenv func(string) string) (serveFlags, error) {
	var f serveFlags
	fs := serveFlagSet(&f)
	if err := parseArgs(fs, serveHead, args, help); err != nil {
		return f, err
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	lookup := lookupEnv(getenv)
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		if given[fl.Name] || envErr != nil {
			return
		}
		name := envName(fl.Name)
		if v, ok := lookup(name); ok {
			if err := fl.Value.Set(v); err != nil {
				if v == "" { // not a value of this flag (a number, a duration): as if unset
					_ = fl.Value.Set(fl.DefValue)
					return
				}
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	if envErr != nil {
		return f, envErr
	}
	if _, _, err := dial.Target(f.listen); err != nil {
		return f, fmt.Errorf("--listen: %w", err)
	}
	if f.logFormat != "json" && f.logFormat != "console" {
		return f, fmt.Errorf("--log-format %q: want json or console", f.logFormat)
	}
	if f.maxPixels < 1 || f.maxKernel < 1 || f.maxMessage < 1<<20 || f.maxBatch < 1 || f.gpuLanes < 1 || f.maxDelay < 0 || f.memoryBudget != 0 && f.memoryBudget < 16<<20 {
		return f, fmt.Errorf("--max-pixels, --max-kernel, --max-batch and --gpu-lanes must be positive, --max-delay not negative, --max-message-bytes at least 1 MiB, --memory-budget 0 (automatic) or at least 16 MiB")
	}
	if f.drain <= 0 {
		return f, fmt.Errorf("--drain-timeout %s: want a positive duration", f.drain)
	}
	if f.backend != "auto" && f.backend != "cpu" && f.backend != "cuda" && f.backend != "sim" {
		return f, fmt.Errorf("--backend %q: want auto, cpu, cuda or sim", f.backend)
	}
	if _, err := parseSim(f.sim); err != nil {
		return f, fmt.Errorf("--sim %q: %w", f.sim, err)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") || (f.tlsClientCA != "" && f.tlsCert == "") {
		return f, fmt.Errorf("--tls-cert and --tls-key go together, and --tls-client-ca needs them")
	}
	if f.workers < 0 || (f.workers == 0 && f.backend != "sim" && f.backend != "cuda") {
		return f, fmt.Errorf("--workers %d: want at least 1 (0 only with --backend cuda or sim, to measure it alone)", f.workers)
	}
	if _, err := f.transport.config(); err != nil {
		return f, err
	}
	if f.metricsListen != "" {
		if _, err := metricsAddr(f.metricsListen); err != nil {
			return f, err
		}
	}
	if _, err := parseLabels(f.metricsLabels); err != nil {
		return f, fmt.Errorf("--metrics-labels %q: %w", f.metricsLabels, err)
	}
	return f, nil
}

// parseLabels reads --metrics-labels: name=value pairs separated by
// commas; names as Prometheus takes them, none twice.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !labelName(name) {
			return nil, fmt.Errorf("%q: want name=value, the name letters, digits and _ (not first a digit, not __ first)", kv)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("label %s given twice", name)
		}
		out[name] = value
	}
	return out, nil
}

func labelName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// envName is the variable of serve's flag name: PIXELFLIGHT_MAX_PIXELS
// for max-pixels.
func envName(name string) string {
	return "PIXELFLIGHT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// serveFlagSet defines serve's flags, with their defaults, on f.
func serveFlagSet(f *serveFlags) *flag.FlagSet {
	fs := newFlagSet("serve")
	lim := udf.DefaultLimits()
	fs.StringVar(&f.listen, "listen", DefaultListen(), "location: grpc+unix:///path.sock (mode 0600), grpc://host:port (empty host: 127.0.0.1; loopback only unless --insecure-listen-any) or grpc+tls://host:port (with --tls-cert, --tls-key)")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "CPU lanes: most images the CPU backend computes at once, shared by all streams (0, with --backend cuda or sim: none). Decoding and PNG encoding are stages of their own, not lanes: they share the cores this process may use with the lanes and go first, whatever --workers is (default: the CPUs this process may use, container limits included)")
	fs.IntVar(&f.maxBatch, "max-batch", 64, "most images of one shape a batching backend (GPU) takes at once")
	fs.IntVar(&f.gpuLanes, "gpu-lanes", cuda.DefaultLanes, "lanes per GPU (and for --backend sim): CUDA streams, each decoding, copying and computing one batch at a time, so that batches overlap on the device")
	fs.DurationVar(&f.maxDelay, "max-delay", 2*time.Millisecond, "how long a batching backend waits for a batch to fill before it takes a smaller one (0: no wait)")
	fs.Int64Var(&f.memoryBudget, "memory-budget", 0, "the sidecar's memory budget in bytes: the input of all streams (a quarter of it at most) and each row's memory from its decode until its result is written (its op's bytes per pixel, from the image's header); a row waits for memory, a row that could never fit is an error in its own row; when input is at its share, streams wait (gRPC flow control) and nothing is dropped (0: 60% of the memory cgroup's limit where one is set, as by YARN, Kubernetes or Docker, else a quarter of the machine's memory)")
	fs.Int64Var(&f.memLimit, "gc-memory-limit", 0, "soft memory limit for Go's garbage collector, in bytes (0: 90% of the memory cgroup's limit, else --memory-budget + 256 MiB + 32 MiB per worker; negative: none); GOMEMLIMIT, when set, wins")
	fs.StringVar(&f.metricsListen, "metrics-listen", "127.0.0.1:9477", "host:port for Prometheus metrics at /metrics (empty host, as :9477: 127.0.0.1; give 0.0.0.0:9477 or an address to serve beyond this machine; empty: off); if the port is taken the sidecar serves without metrics and logs a warning")
	fs.StringVar(&f.metricsLabels, "metrics-labels", "", "labels added to every series at /metrics, as name=value,name=value (the Spark executor plugin sets spark_app_id and spark_executor_id)")
	fs.StringVar(&f.backend, "backend", "auto", "auto: the GPU where one is usable (this binary's CUDA backend, or "+cuda.SiblingName+" next to it, exec'd in its place), else the CPU; cpu; cuda: the GPU or fail; sim: a stand-in GPU for measuring the row path on machines without one (rows of the right shape, no results: see --sim)")
	fs.StringVar(&f.sim, "sim", formatSim(sched.DefaultSimRates()), "with --backend sim: the device it stands for, as OP=time per 512x512 image (other sizes scale with their pixels), copy=bytes per second each way, and decode_jpeg=time per 512x512 JPEG for a device that decodes JPEGs itself (off by default; the host's decoder stands in, in its lanes)")
	fs.Int64Var(&f.maxPixels, "max-pixels", lim.MaxPixels, "largest image in pixels, checked from the header before decoding")
	fs.IntVar(&f.maxKernel, "max-kernel", lim.MaxKernelSide, "largest kernel side")
	fs.IntVar(&f.maxMessage, "max-message-bytes", 256<<20, "largest gRPC message accepted")
	fs.StringVar(&f.cascadeDir, "cascade-dir", "", "directories of OpenCV Haar cascade XML files for detect_faces, searched before "+haar.DebianDir+" (separated by "+string(os.PathListSeparator)+"); requests name a cascade, never a path")
	fs.BoolVar(&f.exitWithParent, "exit-with-parent", false, "stop (draining, as on SIGTERM) when the process that started this one exits; the Spark executor plugin sets it so that no sidecar outlives its executor")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long open streams may finish")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "TLS: the server's certificate chain (PEM), for a grpc+tls://host:port location; read at start")
	fs.StringVar(&f.tlsKey, "tls-key", "", "TLS: the private key of --tls-cert (PEM)")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "mutual TLS: CA certificates (PEM) that clients' certificates must chain to; clients without one are refused")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding a bearer token (whitespace trimmed) that every call must carry as authorization: Bearer <token> metadata, health checks included; warns when group or others may read it")
	f.transport.define(fs)
	fs.BoolVar(&f.insecureListenAny, "insecure-listen-any", false, "allow a plain-text grpc://host:port location on an address that is not loopback (0.0.0.0, a LAN address): anyone who reaches the port can run ops and see the images; logs a warning")
	return fs
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

func serve(args []string, version string, stdout, stderr io.Writer, getenv func(string) string) int {
	parent := os.Getppid() // first: a parent that dies during the start (GPU setup) is still seen
	f, err := parseServe(args, stdout, getenv)
	if err != nil {
		return usageError("serve", err, stderr)
	}
	log, err := newLogger(f.logFormat, f.logLevel, stderr)
	if err != nil {
		return usageError("serve", err, stderr)
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
	// Before listening: --backend auto may exec pixelflight-cuda in our place.
	extra, closeGPU, err := backends(f.backend, f.sim, f.maxBatch, f.gpuLanes, args, log)
	if err != nil {
		log.Error("no backend", zap.Error(err))
		return 1
	}
	defer closeGPU()
	var tlsCfg *tls.Config
	if f.tlsCert != "" {
		if tlsCfg, err = server.LoadTLS(server.TLSFiles{Cert: f.tlsCert, Key: f.tlsKey, ClientCA: f.tlsClientCA}); err != nil {
			log.Error("cannot load the TLS files", zap.Error(err))
			return 1
		}
	}
	var token string
	if f.tokenFile != "" {
		var loose bool
		if token, loose, err = server.ReadToken(f.tokenFile); err != nil {
			log.Error("cannot read the token", zap.Error(err))
			return 1
		}
		if loose {
			log.Warn("the token file may be read by group or others: chmod 600 it", zap.String("token_file", f.tokenFile))
		}
	}
	// Signals are taken before the socket listens: a client may connect,
	// and a signal come, as soon as it does, while the backends still open.
	sigs, stopSignals := takeSignals(f.exitWithParent)
	defer stopSignals()
	lc := server.ListenConfig{TLS: tlsCfg != nil, InsecureListenAny: f.insecureListenAny}
	l, location, err := lc.Listen(context.Background(), f.listen)
	if err != nil {
		log.Error("cannot listen", zap.Error(err))
		return 1
	}
	if a, ok := l.Addr().(*net.TCPAddr); ok && tlsCfg == nil && !a.IP.IsLoopback() {
		log.Warn("--insecure-listen-any: serving plain text beyond loopback; anyone who reaches the port can run ops and read the images (and the token, if any)",
			zap.String("location", location))
	}
	mem, err := memoryOf(f.memoryBudget, f.memLimit, f.workers, memlimit.Sys{Root: "/"})
	if err != nil {
		log.Error("cannot size the memory budget", zap.Error(err))
		return 1
	}
	if getenv("GOMEMLIMIT") == "" && f.memLimit >= 0 {
		// The garbage collector works harder as the heap nears this, so
		// that garbage from decoded images does not double the footprint.
		// Beyond the budget: the lanes' kept buffers, gRPC's buffers, the
		// runtime.
		debug.SetMemoryLimit(mem.gcLimit)
	}
	// The decoders spend their time in C (libjpeg-turbo, libdeflate),
	// where Go counts each as in a system call holding a P. One P more
	// than the cores lets the Go work (gRPC, Arrow, the scheduler) run
	// beside a core's worth of them without the runtime's monitor taking
	// their Ps back; more idle Ps cost thread wake-ups instead. Context
	// switches per image on 2 cores, measured: 3.2 with 3 Ps, 4.6 with 4,
	// and with 2 about 1.6 times as many as with 4 (not measured on more
	// cores). The scheduler still runs at most a core's worth of decoders
	// and CPU lanes per core.
	cpus := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(cpus + 1)
	lim := udf.Limits{MaxPixels: f.maxPixels, MaxKernelSide: f.maxKernel}
	transport, _ := f.transport.config()      // checked by parseServe
	labels, _ := parseLabels(f.metricsLabels) // checked with the flags
	srv := server.New(server.Config{
		Version:         version,
		CPUs:            cpus,
		Limits:          lim,
		Workers:         cmp.Or(f.workers, -1), // 0 on the command line: no CPU lanes
		Backends:        extra,
		MaxDelay:        cmp.Or(f.maxDelay, -1), // 0 on the command line: no wait
		MemoryBudget:    mem.budget,
		MaxMessageBytes: f.maxMessage,
		DrainTimeout:    f.drain,
		Log:             log,
		Cascades:        cascades,
		GPUs:            gpu.Probe,
		TLS:             tlsCfg,
		Token:           token,
		Transport:       transport,
		MetricsLabels:   labels,
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if f.exitWithParent {
		go watchParent(ctx, cancel, parent, log)
	}
	go drainOnSignal(sigs, cancel, log)

	if f.metricsListen != "" {
		// Closed once the gRPC server has stopped: /metrics shows the drain.
		defer serveMetrics(f.metricsListen, srv.MetricsHandler(), log)()
	}
	log.Info("serving", zap.String("location", location), zap.String("version", version),
		zap.Bool("fft_avx2", fft.Vectorized()), zap.String("jpeg_decoder", imageio.JPEGDecoder()), zap.Int("workers", f.workers), zap.String("backend", f.backend),
		zap.Int64("memory_budget", mem.budget), zap.String("memory_budget_from", mem.source), zap.Int64("max_pixels", f.maxPixels), zap.Int("cascades", len(cascades.Names())),
		zap.Bool("tls", tlsCfg != nil), zap.Bool("client_certs", f.tlsClientCA != ""), zap.Bool("token", token != ""))
	if err := srv.Serve(ctx, l); err != nil {
		log.Error("stopped with error", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
}

// backends are the backends to serve beside the CPU for --backend: the
// GPU's (cuda.Select, which may exec pixelflight-cuda in our place), or
// the sim's; and what closes them.
func backends(backend, sim string, maxBatch, lanes int, args []string, log *zap.Logger) ([]sched.Backend, func(), error) {
	if backend == "sim" {
		rates, err := parseSim(sim)
		if err != nil {
			return nil, nil, err
		}
		log.Warn("backend: sim, a stand-in GPU: its rows have the right shape but hold no results", zap.String("sim", sim))
		return []sched.Backend{sched.NewSim(lanes, maxBatch, rates)}, func() {}, nil
	}
	gpus, err := cuda.Select(backend, "serve", args, cuda.Config{MaxBatch: maxBatch, Lanes: lanes}, log)
	if err != nil || len(gpus) == 0 {
		return nil, func() {}, err
	}
	bs := make([]sched.Backend, len(gpus))
	for i, g := range gpus {
		bs[i] = g
	}
	return bs, func() {
		for _, g := range gpus {
			g.Close()
		}
	}, nil
}

// parseSim reads --sim: OP=DURATION (per 512x512 image) and copy=BYTES/S,
// comma-separated; what it leaves out keeps its default.
func parseSim(v string) (sched.SimRates, error) {
	r := sched.DefaultSimRates()
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if k == "decode_jpeg" {
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 || d > time.Minute {
				return r, fmt.Errorf("decode_jpeg=%q: want a duration such as 30us (0: the sim decodes nothing)", val)
			}
			r.DecodeJPEG = d
			continue
		}
		if k == "copy" {
			c, err := strconv.ParseFloat(val, 64)
			if err != nil || !(c > 0) || math.IsInf(c, 0) {
				return r, fmt.Errorf("copy=%q: want bytes per second, as 20e9", val)
			}
			r.Copy = c
			continue
		}
		if _, ok := r.PerImage[k]; !ok {
			return r, fmt.Errorf("unknown setting %q: want fft_convolve, detect_faces, detect_blobs, copy or decode_jpeg", k)
		}
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 || d > time.Minute {
			return r, fmt.Errorf("%s=%q: want a duration such as 12us", k, val)
		}
		r.PerImage[k] = d
	}
	return r, nil
}

// formatSim writes r as --sim reads it.
func formatSim(r sched.SimRates) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(r.PerImage)) {
		parts = append(parts, op+"="+r.PerImage[op].String())
	}
	parts = append(parts, "copy="+strconv.FormatFloat(r.Copy, 'g', -1, 64))
	if r.DecodeJPEG > 0 {
		parts = append(parts, "decode_jpeg="+r.DecodeJPEG.String())
	}
	return strings.Join(parts, ",")
}

// serveMetrics serves h at /metrics on addr and returns what stops it. A
// taken port is a warning, not a failure: several executors' sidecars may
// share a node, and the first one serves the port.
func serveMetrics(addr string, h http.Handler, log *zap.Logger) (stop func()) {
	bind, err := metricsAddr(addr)
	if err != nil {
		log.Warn("serving without metrics", zap.Error(err))
		return func() {}
	}
	l, err := net.Listen("tcp", bind)
	if err != nil {
		log.Warn("serving without metrics: cannot listen", zap.String("metrics_listen", addr), zap.Error(err))
		return func() {}
	}
	if ip, ok := l.Addr().(*net.TCPAddr); ok && !ip.IP.IsLoopback() {
		log.Warn("metrics are open beyond this machine", zap.String("metrics_listen", l.Addr().String()))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go hs.Serve(l) //nolint:errcheck // ends with ErrServerClosed at shutdown
	log.Info("metrics", zap.String("metrics_listen", "http://"+l.Addr().String()+"/metrics"))
	return func() { hs.Close() }
}
