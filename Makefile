# pixelflight: everything a fresh machine needs is installed from here.
#   make demo   build, install, start the sidecar, run a PySpark job, stop
#   make test   every test (what CI runs)
#   make bench  ours vs scipy, side by side (figures go to BENCHMARKS.md)
#   make bench-sched  the scheduler: two backends, many streams, memory cap
#   make fuzz   long fuzz runs (LONGFUZZ=5m per target)

GO       ?= go
PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
IMAGES   := build/images
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 10s
LONGFUZZ ?= 5m
# The FFT's 8-wide AVX2 passes need Go's SIMD experiment (amd64 only); the
# binary checks the CPU at run time and falls back to the scalar passes.
SIMD     := $(if $(filter amd64,$(shell $(GO) env GOARCH)),simd,)
GOSRC    := $(shell find . -name '*.go' -not -path './.venv/*' -not -path './build/*') go.mod go.sum

# Spark runs on this machine only; keep it off the network interfaces.
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))

FUZZ_TARGETS := imageio:FuzzDecodeGray imageio:FuzzSparkImage udf:FuzzCommand kernels/haar:FuzzParse
CASCADES     := /usr/share/opencv4/haarcascades

.PHONY: all build plugin venv java cascades data lint-sh test test-go test-py fuzz-short fuzz demo bench bench-sched testdata clean

all: build

build: bin/pixelflight

bin/pixelflight: $(GOSRC)
	GOEXPERIMENT=$(SIMD) $(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/pixelflight

# The Spark executor plugin (Java 17, Maven; only the Spark plugin API is
# fetched, as provided scope).
PLUGIN := spark-plugin/target/pixelflight-spark-plugin.jar
plugin: $(PLUGIN)

$(PLUGIN): spark-plugin/pom.xml $(shell find spark-plugin/src -name '*.java')
	@command -v mvn >/dev/null || { apt-get update -q && apt-get install -y -q maven; }
	cd spark-plugin && mvn -q -B package

# PySpark needs a JVM (Java 17). Debian's is installed when none is found.
java:
	@command -v java >/dev/null || { apt-get update -q && apt-get install -y -q openjdk-17-jre-headless; }

# OpenCV's Haar cascades for detect_faces, from Debian's opencv-data.
cascades:
	@test -f $(CASCADES)/haarcascade_frontalface_default.xml || { apt-get update -q && apt-get install -y -q opencv-data; }

venv: $(VENV)/.installed

$(VENV)/.installed: python/requirements.txt python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r python/requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e python
	touch $@

data: $(IMAGES)/.made

$(IMAGES)/.made: scripts/make_images.py $(VENV)/.installed
	$(PY) scripts/make_images.py $(IMAGES)
	touch $@

test: test-go fuzz-short test-py

# Every shell script (spark-conf's bootstrap and init actions, scripts/):
# bash -n, then shellcheck at warning level and above (Debian's shellcheck
# is installed when none is found). spark-conf/testdata holds bad ones on purpose.
SH_SCRIPTS = $(shell find . -name '*.sh' -not -path './.venv/*' -not -path './build/*' -not -path './spark-conf/testdata/*' | sort)
lint-sh:
	@command -v shellcheck >/dev/null || { apt-get update -q && apt-get install -y -q shellcheck; }
	@for f in $(SH_SCRIPTS); do bash -n "$$f" || exit 1; done
	shellcheck --severity=warning $(SH_SCRIPTS)

# Both builds of the kernels are tested: the portable scalar one and, where
# the machine has it, the SIMD one against the same references.
test-go: cascades
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race ./sched/ ./server/ ./loadgen/
	$(if $(SIMD),GOEXPERIMENT=$(SIMD) $(GO) vet ./... && GOEXPERIMENT=$(SIMD) $(GO) test -count=1 ./kernels/... ./udf/)

fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) ./$$pkg/ >/dev/null || \
			{ $(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=1x ./$$pkg/; exit 1; }; \
	done

fuzz:
	$(MAKE) fuzz-short FUZZTIME=$(LONGFUZZ)

test-py: build plugin venv data java cascades lint-sh
	$(PY) -m pytest -q tests

demo: build venv data java cascades
	scripts/demo.sh

# The scheduler: additivity of two backends, batching across streams,
# memory under --max-inflight-bytes (figures go to BENCHMARKS.md).
bench-sched: build
	$(PY) scripts/schedbench.py

bench: build venv data
	GOEXPERIMENT=$(SIMD) $(GO) test -run='^$$' -bench='Convolve/cpu-512$$' -benchtime=3s -count=3 -cpu=1 ./kernels/
	$(PY) scripts/bench.py --images $(IMAGES)/good

# testdata: regenerate the scipy / scikit-image references the Go tests compare with.
testdata: venv
	$(PY) scripts/convref.py udf/testdata/fftconvolve_ref.json
	$(PY) scripts/blobref.py
	$(PY) scripts/watershedref.py
	$(PY) scripts/haarref.py

clean:
	rm -rf bin build spark-plugin/target
