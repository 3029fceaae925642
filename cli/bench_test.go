package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelflight/pixelflight/loadgen"
)

func TestBenchFlags(t *testing.T) {
	var stderr bytes.Buffer
	f, err := parseBench(nil, &stderr, env(map[string]string{"PIXELFLIGHT_ENDPOINT": "grpc://127.0.0.1:9"}))
	if err != nil {
		t.Fatal(err)
	}
	if f.endpoint != "grpc://127.0.0.1:9" || f.streams != 16 || f.rows != 8 || f.op != "fft_convolve" || f.genW != 512 || f.genH != 512 ||
		string(f.params) != `{"kernel":"gaussian","output":"stats","sigma":2}` {
		t.Errorf("defaults: %+v", f)
	}
	f, err = parseBench([]string{"--op", "echo", "--endpoint", "grpc://h:1", "--generate", "64X32"}, &stderr, env(nil))
	if err != nil || string(f.params) != "{}" || f.endpoint != "grpc://h:1" || f.genW != 64 || f.genH != 32 {
		t.Errorf("echo: %+v %v", f, err)
	}
	if f, err := parseBench([]string{"--serve", "--workers", "2"}, &stderr, env(map[string]string{"PIXELFLIGHT_ENDPOINT": "grpc://h:1"})); err != nil || !f.serve || f.workers != 2 {
		t.Errorf("--serve over the environment: %+v %v", f, err)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--params", "not json"}, "--params: params not json: want a JSON object"},
		{[]string{"--params", "[1, 2]"}, "want a JSON object"},
		{[]string{"--generate", "512"}, `--generate: "512": want WIDTHxHEIGHT`},
		{[]string{"--generate", "0x5"}, "want WIDTHxHEIGHT"},
		{[]string{"--images", "x", "--generate", "8x8"}, "choose one"},
		{[]string{"--serve", "--endpoint", "grpc://h:1"}, "choose one"},
		{[]string{"--endpoint", "grpc://h:1", "--workers", "3"}, "--workers, --backend, --sim and --gpu-lanes set up the started server"},
		{[]string{"--endpoint", "grpc://h:1", "--backend", "cuda"}, "--workers, --backend, --sim and --gpu-lanes set up the started server"},
		{[]string{"--endpoint", "grpc://h:1", "--gpu-lanes", "4"}, "--gpu-lanes set up the started server"},
		{[]string{"--gpu-lanes", "0"}, "--gpu-lanes must be at least 1"},
		{[]string{"--backend", "gpu"}, `--backend "gpu": want auto, cpu, cuda or sim`},
		{[]string{"--streams", "0"}, "at least 1"},
		{[]string{"--count", "0", "--duration", "0s"}, "--duration must be positive"},
		{[]string{"--count", "-1"}, "--count"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var stderr bytes.Buffer
		_, err := parseBench(c.args, &stderr, env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}

func runBenchMain(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(append([]string{"bench"}, args...), "test", &out, &errOut, env(vars))
	return code, out.String(), errOut.String()
}

func TestBenchInProcess(t *testing.T) {
	// Three good images and a corrupt one: every fourth image fails.
	dir := t.TempDir()
	imgs, err := loadgen.Generate(40, 30, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a.png", "b.png", "c.png"} {
		os.WriteFile(filepath.Join(dir, name), imgs[i], 0o644)
	}
	os.WriteFile(filepath.Join(dir, "d.png"), imgs[0][:len(imgs[0])/2], 0o644)

	for _, c := range []struct {
		args      []string
		rowErrors int64
		source    string
	}{
		{[]string{"--op", "echo", "--generate", "32x32"}, 0, "generated 32x32"},
		{[]string{"--op", "echo", "--generate", "32x32", "--backend", "auto"}, 0, "generated 32x32"}, // no GPU here: the CPU
		{[]string{"--op", "fft_convolve", "--params", `{"output":"stats"}`, "--images", dir}, 50, dir},
		{[]string{"--op", "fft_convolve", "--params", `{"output":"png"}`, "--images", dir, "--backend", "sim"}, 50, dir},
	} {
		args := append([]string{"--streams", "4", "--count", "200", "--rows-per-batch", "3", "--warmup", "0", "--workers", "2", "--json"}, c.args...)
		code, stdout, stderr := runBenchMain(t, nil, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		var rep benchReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%q: %v: %s", args, err, stdout)
		}
		if rep.Images != 200 || rep.Batches != 67 || rep.RowErrors != c.rowErrors || rep.Source != c.source || rep.ServerWorkers != 2 || rep.Streams != 4 || rep.RowsPerBatch != 3 {
			t.Errorf("%q: report %s", args, stdout)
		}
		// The server's CPU per image, and each stage's work: every good
		// image decoded once and run by a backend, the PNGs encoded.
		dec, ran := rep.Stages["decode"], rep.Stages["cpu"].Rows+rep.Stages["sim"].Rows
		if rep.HostCPUUSPerImage <= 0 || c.source == dir && (dec.Rows != 200 || ran != 200-c.rowErrors || dec.BusySeconds <= 0) {
			t.Errorf("%q: host CPU %g µs/image, stages %+v", args, rep.HostCPUUSPerImage, rep.Stages)
		}
		if c.args[len(c.args)-1] == "sim" && (rep.Stages["sim"].Rows == 0 || rep.Stages["encode"].Rows != rep.Stages["sim"].Rows+rep.Stages["cpu"].Rows) {
			t.Errorf("%q: stages %+v", args, rep.Stages)
		}
		var m map[string]any
		json.Unmarshal([]byte(stdout), &m)
		for _, k := range []string{"images", "row_errors", "seconds", "images_per_s", "mb_per_s", "latency_ms", "streams", "rows_per_batch", "op", "source", "host_cpu_us_per_image", "stages"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %q in %s", k, stdout)
			}
		}
	}

	// The table, with a short warmup, by duration.
	code, stdout, stderr := runBenchMain(t, nil, "--streams", "2", "--duration", "100ms", "--warmup", "50ms", "--workers", "2", "--generate", "16x16", "--op", "info")
	if code != 0 || !strings.Contains(stdout, "images/s") || !strings.Contains(stdout, "p99") || !strings.Contains(stdout, "µs per image") {
		t.Errorf("table: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestBenchErrors(t *testing.T) {
	missing := "grpc+unix://" + filepath.Join(t.TempDir(), "none.sock")
	for _, c := range []struct {
		vars map[string]string
		args []string
		code int
		want string
	}{
		{nil, []string{"--endpoint", missing, "--generate", "8x8"}, 1, "cannot reach " + missing},
		{map[string]string{"PIXELFLIGHT_ENDPOINT": missing}, []string{"--generate", "8x8"}, 1, "cannot reach " + missing},
		{nil, []string{"--op", "nope", "--count", "4", "--warmup", "0", "--generate", "8x8", "--workers", "1"}, 1, `unknown op "nope"`},
		{nil, []string{"--warmup", "0", "--count", "4", "--generate", "8x8", "--workers", "1", "--params", `{"sigma":-1}`}, 1, "sigma -1"},
		{nil, []string{"--images", t.TempDir()}, 1, "no .png"},
		{nil, []string{"--params", "{"}, 2, "--params"},
		// This binary has no CUDA backend and no pixelflight-cuda beside it.
		{nil, []string{"--backend", "cuda", "--count", "4", "--warmup", "0", "--generate", "8x8"}, 1, "--backend cuda: no GPU backend here"},
	} {
		code, _, stderr := runBenchMain(t, c.vars, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%q %v: exit %d %q, want %d and %q", c.args, c.vars, code, stderr, c.code, c.want)
		}
	}
}

// The server bench starts is the one its report describes: serve's
// PIXELFLIGHT_* variables, as an executor's environment may hold them,
// do not reach it (a token it would demand, a limit it would apply).
func TestBenchStartedServerIgnoresServeVariables(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("s3cret"), 0o600)
	t.Setenv("PIXELFLIGHT_TOKEN_FILE", tok)
	t.Setenv("PIXELFLIGHT_MAX_PIXELS", "1")
	t.Setenv("PIXELFLIGHT_TLS_CERT", "/no/such/cert.pem")
	code, stdout, stderr := runBenchMain(t, nil, "--count", "8", "--warmup", "0", "--workers", "1", "--generate", "8x8", "--op", "info", "--json")
	var rep benchReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Images != 8 || rep.RowErrors != 0 {
		t.Errorf("exit %d, report %s%s: want 8 images, no row errors", code, stdout, stderr)
	}
}

// A timed run shorter than a batch's latency says so, beside the images
// it answered after the window.
func TestPrintBenchWindow(t *testing.T) {
	var rep benchReport
	json.Unmarshal([]byte(`{"images": 16, "images_in_window": 0, "seconds": 0.001, "wall_seconds": 0.25, "images_per_s": 0, "server_workers": 1, "server_backend": "cpu"}`), &rep)
	var out bytes.Buffer
	printBench(&out, rep)
	for _, want := range []string{"answered    16 images in 0.25 s, 0 of them within the 0.001 s window", "longer --duration or --count"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	json.Unmarshal([]byte(`{"images": 100, "images_in_window": 90, "seconds": 1, "wall_seconds": 1.1, "images_per_s": 90}`), &rep)
	out.Reset()
	printBench(&out, rep)
	for _, want := range []string{"answered    100 images in 1.10 s, 90 of them within the 1 s window", "90.0 images/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
