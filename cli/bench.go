package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pixelflight/pixelflight/cuda"
	"github.com/pixelflight/pixelflight/internal/dial"
	"github.com/pixelflight/pixelflight/loadgen"
	"github.com/pixelflight/pixelflight/sched"
)

const (
	benchDefaultOp     = "fft_convolve"
	benchDefaultParams = `{"kernel":"gaussian","sigma":2,"output":"stats"}`
	benchGenerated     = 8 // distinct images --generate makes
)

type benchFlags struct {
	endpoint, images, generate, op string
	backend, sim                   string
	params                         json.RawMessage
	serve, json                    bool
	workers, streams, rows, count  int
	gpuLanes                       int
	duration, warmup               time.Duration
	genW, genH                     int
	client                         *probe // TLS and token for --endpoint
}

const benchHead = "Usage: pixelflight bench [flags]\n\nOpens --streams Flight streams against a sidecar and reports images/s, MB/s,\nbatch latency and the backend mix. See package loadgen for what the figures mean.\n\n"

// parseBench reads bench's flags; asked for help, it writes it to help and
// returns flag.ErrHelp.
func parseBench(args []string, help io.Writer, getenv func(string) string) (benchFlags, error) {
	var f benchFlags
	var params string
	fs := newFlagSet("bench")
	fs.StringVar(&f.endpoint, "endpoint", getenv("PIXELFLIGHT_ENDPOINT"), "sidecar to load: grpc+unix:///path.sock or grpc://host:port (default $PIXELFLIGHT_ENDPOINT; neither: a server this command starts, see --serve)")
	fs.BoolVar(&f.serve, "serve", false, "start a server (this binary's serve, on a temp Unix socket) and load it, even when $PIXELFLIGHT_ENDPOINT is set")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "CPU lanes of the started server (0: none, with --backend cuda or sim)")
	fs.StringVar(&f.backend, "backend", "cpu", "the started server's backends, as serve's --backend: cpu; cuda (the GPU too, or fail); auto; sim (a stand-in GPU: see serve's --sim)")
	fs.StringVar(&f.sim, "sim", formatSim(sched.DefaultSimRates()), "with --backend sim: the device it stands for, as serve's --sim")
	fs.IntVar(&f.gpuLanes, "gpu-lanes", cuda.DefaultLanes, "lanes per GPU of the started server, as serve's --gpu-lanes")
	fs.IntVar(&f.streams, "streams", 16, "concurrent DoExchange streams, each on its own connection (executor tasks)")
	fs.IntVar(&f.rows, "rows-per-batch", 8, "images per record batch")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send (with --count 0)")
	fs.IntVar(&f.count, "count", 0, "images to send in all, then stop (0: run for --duration)")
	fs.StringVar(&f.images, "images", "", "folder of image files to send in turn (*.png *.jpg *.jpeg *.pgm *.bmp *.tif *.webp, not recursive)")
	fs.StringVar(&f.generate, "generate", "512x512", "without --images: send generated grayscale PNGs of this size")
	fs.StringVar(&f.op, "op", benchDefaultOp, "op to run")
	fs.StringVar(&params, "params", benchDefaultParams, "op params, a JSON object; the default is for "+benchDefaultOp+", other ops default to {}")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "run this long first and discard the figures (0: no warmup)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	f.client = clientFlags(fs, getenv)
	if err := parseArgs(fs, benchHead, args, help); err != nil {
		return f, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case set["serve"] && set["endpoint"]:
		return f, errors.New("--serve and --endpoint: choose one")
	case (set["workers"] || set["backend"] || set["sim"] || set["gpu-lanes"]) && f.endpoint != "" && !f.serve:
		return f, errors.New("--workers, --backend, --sim and --gpu-lanes set up the started server; an external one (--endpoint, $PIXELFLIGHT_ENDPOINT) has its own")
	case f.gpuLanes < 1:
		return f, errors.New("--gpu-lanes must be at least 1")
	case f.backend != "auto" && f.backend != "cpu" && f.backend != "cuda" && f.backend != "sim":
		return f, fmt.Errorf("--backend %q: want auto, cpu, cuda or sim", f.backend)
	case set["images"] && set["generate"]:
		return f, errors.New("--images and --generate: choose one")
	case f.workers < 0 || f.workers == 0 && f.backend != "cuda" && f.backend != "sim":
		return f, errors.New("--workers must be at least 1 (0 only with --backend cuda or sim)")
	case f.streams < 1 || f.rows < 1:
		return f, errors.New("--streams and --rows-per-batch must be at least 1")
	case f.count < 0:
		return f, errors.New("--count must be 0 or more")
	case f.count == 0 && f.duration <= 0:
		return f, errors.New("--duration must be positive when --count is 0")
	case f.warmup < 0:
		return f, errors.New("--warmup must not be negative")
	}
	if _, err := parseSim(f.sim); err != nil {
		return f, fmt.Errorf("--sim %q: %w", f.sim, err)
	}
	if f.endpoint != "" && !f.serve { // the server bench starts has no token
		if _, _, err := dial.Target(f.endpoint); err != nil {
			return f, err
		}
		if err := f.client.readToken(getenv); err != nil {
			return f, err
		}
	}
	if !set["params"] && f.op != benchDefaultOp {
		params = "{}"
	}
	var err error
	if f.params, err = loadgen.ParseParams([]byte(params)); err != nil {
		return f, fmt.Errorf("--params: %w", err)
	}
	if f.images == "" {
		if f.genW, f.genH, err = parseSize(f.generate); err != nil {
			return f, fmt.Errorf("--generate: %w", err)
		}
	}
	return f, nil
}

// parseSize reads WIDTHxHEIGHT.
func parseSize(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(strings.ToLower(s), "x")
	w, werr := strconv.Atoi(ws)
	h, herr := strconv.Atoi(hs)
	if !ok || werr != nil || herr != nil || w < 1 || h < 1 {
		return 0, 0, fmt.Errorf("%q: want WIDTHxHEIGHT, as in 512x512", s)
	}
	return w, h, nil
}

// benchReport is loadgen's report and where the load came from.
type benchReport struct {
	loadgen.Report
	Source         string  `json:"source"`                   // the folder, or "generated WxH"
	DistinctImages int     `json:"distinct_images"`          // sent in turn
	ServerWorkers  int     `json:"server_workers,omitempty"` // the started server's; absent for an external one
	ServerBackend  string  `json:"server_backend,omitempty"` // the started server's --backend
	WarmupSeconds  float64 `json:"warmup_seconds"`
}

func bench(args []string, version string, stdout, stderr io.Writer, getenv func(string) string) int {
	f, err := parseBench(args, stdout, getenv)
	if err != nil {
		return usageError("bench", err, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := runBench(ctx, f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "pixelflight bench: %v\n", err)
		return 1
	}
	if f.json {
		if none := noneInWindow(rep); none != "" {
			fmt.Fprintf(stderr, "pixelflight bench: %s\n", none)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			fmt.Fprintf(stderr, "pixelflight bench: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	printBench(stdout, rep)
	return 0
}

func runBench(ctx context.Context, f benchFlags, stderr io.Writer) (benchReport, error) {
	rep := benchReport{Source: f.images, WarmupSeconds: f.warmup.Seconds()}
	var images [][]byte
	var err error
	if f.images != "" {
		images, _, err = loadgen.ReadImages(f.images)
	} else {
		images, err = loadgen.Generate(f.genW, f.genH, benchGenerated)
		rep.Source = fmt.Sprintf("generated %dx%d", f.genW, f.genH)
	}
	if err != nil {
		return rep, err
	}
	rep.DistinctImages = len(images)

	endpoint := f.endpoint
	if endpoint == "" || f.serve {
		loc, stopServer, err := startBenchServer(ctx, f, stderr)
		if err != nil {
			return rep, err
		}
		defer stopServer()
		endpoint, rep.ServerWorkers, rep.ServerBackend = loc, f.workers, f.backend
	}
	cfg := loadgen.Config{
		Endpoint:     endpoint,
		Token:        f.client.token,
		Streams:      f.streams,
		RowsPerBatch: f.rows,
		Duration:     f.duration,
		Count:        f.count,
		Command:      loadgen.Command{Op: f.op, Params: f.params},
		Images:       images,
	}
	if _, useTLS, err := dial.Target(endpoint); err == nil && useTLS {
		if cfg.TLS, err = f.client.tlsConfig(); err != nil {
			return rep, err
		}
	}
	if f.warmup > 0 {
		warm := cfg
		warm.Count, warm.Duration = 0, f.warmup
		if _, err := loadgen.Run(ctx, warm); err != nil {
			return rep, fmt.Errorf("warmup: %w", err)
		}
	}
	rep.Report, err = loadgen.Run(ctx, cfg)
	return rep, err
}

// startBenchServer starts this binary's serve on a Unix socket in a new
// temp dir, as its own process so that the server's CPU time is its own,
// and returns its location and a function that stops it (SIGTERM) and
// removes the dir. Its log (warnings and up) goes to stderr. With
// --backend auto or cuda, serve opens the GPU backend (or execs
// pixelflight-cuda, which does).
func startBenchServer(ctx context.Context, f benchFlags, stderr io.Writer) (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("starting a server: %w", err)
	}
	dir, err := os.MkdirTemp("", "pixelflight-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("starting a server: %w", err)
	}
	sock := filepath.Join(dir, "bench.sock")
	loc := "grpc+unix://" + sock
	cmd := exec.Command(self, "serve", "--listen", loc, "--workers", strconv.Itoa(f.workers), "--backend", f.backend, "--gpu-lanes", strconv.Itoa(f.gpuLanes),
		"--sim", f.sim, "--metrics-listen", "", "--log-format", "console", "--log-level", "warn")
	cmd.Env = append(withoutServeVars(os.Environ()), benchChildEnv+"=1")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("starting a server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // as above
			<-exited
		}
		os.RemoveAll(dir)
	}
	// Ready once its socket answers.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return loc, stop, nil
		}
		select {
		case err := <-exited:
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("the server exited before serving (%v): see its log above", err)
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("the server did not serve within 2 minutes")
		}
	}
}

// benchChildEnv is set in the environment of the server bench starts.
const benchChildEnv = "PIXELFLIGHT_BENCH_SERVER"

// withoutServeVars is environ without serve's flag variables
// (PIXELFLIGHT_TOKEN_FILE, PIXELFLIGHT_MAX_PIXELS, ...), which an
// executor's environment may hold: the server bench starts is set up by
// its flags alone, as the report describes it.
func withoutServeVars(environ []string) []string {
	serveVars := map[string]bool{}
	serveFlagSet(&serveFlags{}).VisitAll(func(fl *flag.Flag) { serveVars[envName(fl.Name)] = true })
	return slices.DeleteFunc(environ, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return serveVars[name]
	})
}

// noneInWindow says so when a timed run answered images, but none within
// its window (images_per_s 0); else it is "".
func noneInWindow(r benchReport) string {
	if r.ImagesInWindow > 0 || r.Images == 0 {
		return ""
	}
	return fmt.Sprintf("no image was answered within the %s s window (all %d came after it), so images/s is 0: use a longer --duration or --count",
		strconv.FormatFloat(r.Seconds, 'f', -1, 64), r.Images)
}

func printBench(w io.Writer, r benchReport) {
	where := r.Endpoint
	if r.ServerWorkers >= 0 && r.ServerBackend != "" {
		where = fmt.Sprintf("started for this run: serve --workers %d --backend %s", r.ServerWorkers, r.ServerBackend)
	}
	fmt.Fprintf(w, "pixelflight bench: %s %s\n", r.Op, r.Params)
	fmt.Fprintf(w, "  server      %s\n", where)
	fmt.Fprintf(w, "  load        %d streams x %d rows/batch, %d distinct images (%s) sent in turn, after %s warmup\n",
		r.Streams, r.RowsPerBatch, r.DistinctImages, r.Source, time.Duration(r.WarmupSeconds*float64(time.Second)))
	fmt.Fprintf(w, "  answered    %d images in %.2f s", r.Images, r.WallSeconds)
	if r.Seconds != r.WallSeconds { // a timed run
		fmt.Fprintf(w, ", %d of them within the %s s window;", r.ImagesInWindow, strconv.FormatFloat(r.Seconds, 'f', -1, 64))
	} else {
		fmt.Fprint(w, ",")
	}
	fmt.Fprintf(w, " %d row errors\n", r.RowErrors)
	if none := noneInWindow(r); none != "" {
		fmt.Fprintf(w, "  throughput  not measured: %s\n", none)
	} else {
		fmt.Fprintf(w, "  throughput  %.1f images/s; %.1f MB/s of image bytes sent\n", r.ImagesPerS, r.MBPerS)
	}
	l := r.LatencyMS
	fmt.Fprintf(w, "  latency     per batch, sent to answered: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms\n", l.P50, l.P90, l.P99, l.Max)
	if r.HostCPUUSPerImage > 0 {
		fmt.Fprintf(w, "  server CPU  %.0f µs per image (the server process, every thread)\n", r.HostCPUUSPerImage)
	}
	if len(r.Stages) > 0 {
		fmt.Fprintf(w, "  stages      where the server's time went (busy: wall time of the stage's goroutines, and its share of their time; CPU: their threads')\n")
		for _, name := range slices.Sorted(maps.Keys(r.Stages)) {
			st := r.Stages[name]
			if st.Rows == 0 {
				continue
			}
			line := fmt.Sprintf("    %-8s %d rows, busy %.0f%%, %.0f µs/row", name, st.Rows, 100*st.BusyFraction, st.USPerRow)
			if st.CPUUSPerRow > 0 {
				line += fmt.Sprintf(" (CPU %.0f µs/row)", st.CPUUSPerRow)
			}
			if st.Batches > 0 {
				line += fmt.Sprintf(", %d batches %.0f%% full", st.Batches, 100*st.BatchFill)
			}
			fmt.Fprintln(w, line)
		}
	}
	if r.BackendMix != nil {
		var total int64
		for _, n := range r.BackendMix {
			total += n
		}
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r.BackendMix)) {
			n := r.BackendMix[name]
			parts = append(parts, fmt.Sprintf("%s %d rows (%.1f%%)", name, n, 100*float64(n)/float64(max(total, 1))))
		}
		fmt.Fprintf(w, "  backends    %s (decode: rows whose image did not decode)\n", strings.Join(parts, ", "))
	}
}
