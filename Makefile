# pixelflight: everything a fresh machine needs is installed from here.
#   make demo   build, install, start the sidecar, run a PySpark job, stop
#   make test   every test (what CI runs; about 16 minutes on a clean clone, 2 cores)
#   make check  the quick check after a change (about 3 minutes once built)
#   make bench  ours vs scipy, side by side (figures go to BENCHMARKS.md)
#   make bench-sched  the row path: host cost, defaults vs a --workers sweep (sim backend), memory cap
#   make bench-datasource  the pixelflight data source vs binaryFile + map_images
#   make fuzz   fuzz every target (FUZZTIME=5m each; make test replays the seed corpora)

GO       ?= go
PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
IMAGES   := build/images
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 5m
# The FFT's 8-wide AVX2 passes need Go's SIMD experiment (amd64 only); the
# binary checks the CPU at run time and falls back to the scalar passes.
SIMD     := $(if $(filter amd64,$(shell $(GO) env GOARCH)),simd,)
# Floating point as written: from GOAMD64=v3 Go fuses x*y+z into one
# multiply-add on amd64, and the kernels' scalar loops must round as their
# vector ones do (kernels/blob: the same responses, bit for bit, with or
# without AVX2).
export GOAMD64 := v1
GOSRC    := $(shell find . -name '*.go' -not -path './.venv/*' -not -path './build/*') go.mod go.sum

# Spark runs on this machine only; keep it off the network interfaces.
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))

FUZZ_TARGETS := imageio:FuzzDecodeGray imageio:FuzzDecodeJPEG imageio:FuzzDecodePNG imageio:FuzzSparkImage udf:FuzzCommand udf:FuzzParams udf:FuzzLabelsPNG kernels/haar:FuzzParse cuda:FuzzBlobs server:FuzzUnmarshalFlightData imageio:FuzzJPEGInfo
CASCADES     := /usr/share/opencv4/haarcascades

.PHONY: all build plugin wheel k8scheck yarn-cluster test-yarn test-matrix venv maven debs data lint-sh test test-go test-py check fuzz demo bench bench-sched bench-datasource testdata clean

all: build

build: bin/pixelflight

bin/pixelflight: $(GOSRC)
	GOEXPERIMENT=$(SIMD) $(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/pixelflight

# The Spark executor plugin and the pixelflight data source (Java 17,
# Maven; Spark's, Hadoop's and Arrow's APIs are provided scope, not
# fetched with their trees; the Flight client is bundled, shaded), built
# twice: against Spark 4.x (Scala 2.13, Arrow 18) and, with -P spark3.5,
# Spark 3.5 (Scala 2.12, Arrow 12). pixelflight.spark.plugin_jar() picks.
PLUGIN    := spark-plugin/target/pixelflight-spark-plugin.jar
PLUGIN_35 := spark-plugin/target/spark3.5/pixelflight-spark-plugin-spark3.5.jar
plugin: $(PLUGIN) $(PLUGIN_35)

# Maven's runs go one after another (| order): they share spark-plugin/target
# and the local repository, which Maven 3.8 does not lock. .mvn/jvm.config
# gives Maven's JVM C1 alone and the serial collector: a run lasts seconds,
# and so takes half the CPU. scripts/mvn.sh is `mvn -q -B` without the
# terminal escape codes Debian's Maven writes even in batch mode.
$(PLUGIN): spark-plugin/pom.xml $(shell find spark-plugin/src -type f) python/pixelflight/params.json python/pixelflight/outputs.json | maven
	cd spark-plugin && ../scripts/mvn.sh package

$(PLUGIN_35): spark-plugin/pom.xml $(shell find spark-plugin/src -type f) python/pixelflight/params.json python/pixelflight/outputs.json | maven $(PLUGIN)
	cd spark-plugin && ../scripts/mvn.sh -P spark3.5 package

# The platform wheel, build/dist/pixelflight-0.1.0-py3-none-manylinux_2_X_x86_64.whl:
# the Python client with bin/pixelflight (and bin/pixelflight-cuda when
# `make build-cuda` made it first) as scripts, so `pip install` of this one
# file puts the binaries in the environment's bin/ (python -m
# pixelflight.sidecar --path prints where), and the plugin jars for Spark
# 4.x and 3.5 in the package (python -m pixelflight.sidecar --jar prints the
# one for the installed pyspark). X: the newest glibc the binaries need.
# Where one make run builds the CUDA binary too (make test's setup,
# test-py, image, gpu-kit), the wheel depends on it, so that it waits for
# it and is packed again with it; otherwise on bin/pixelflight-cuda if it
# is there. The recipe looks for the binary when it runs.
WHEEL := build/dist/.made
WHEEL_CUDA := $(if $(filter build-cuda test-py image gpu-kit,$(MAKECMDGOALS)),bin/pixelflight-cuda,$(wildcard bin/pixelflight-cuda))
wheel: $(WHEEL)

$(WHEEL): bin/pixelflight $(WHEEL_CUDA) $(PLUGIN) $(PLUGIN_35) $(VENV)/.installed scripts/wheel.py \
		python/pyproject.toml $(shell find python/pixelflight -name '*.py')
	$(PY) scripts/wheel.py build/dist bin/pixelflight $$(ls bin/pixelflight-cuda 2>/dev/null) $(PLUGIN) $(PLUGIN_35)
	touch $@

# A YARN cluster for the tests (tests/yarn/: Hadoop's MiniYARNCluster from
# Maven Central at the Hadoop version pyspark bundles; a ResourceManager and
# two NodeManagers in one JVM). `make test-yarn` runs the YARN tests alone.
YARN_CP := tests/yarn/target/classpath.txt
yarn-cluster: $(YARN_CP)

$(YARN_CP): tests/yarn/pom.xml $(shell find tests/yarn/src -type f) | maven $(PLUGIN_35)
	cd tests/yarn && ../../scripts/mvn.sh compile

test-yarn: build plugin yarn-cluster venv data debs
	$(PY) -m pytest -q tests/test_yarn.py

# The Kubernetes pod template's checker (tests/test_templates.py), a Go
# module of its own (k8s.io/api).
K8SCHECK := build/k8scheck
k8scheck: $(K8SCHECK)

$(K8SCHECK): $(wildcard tools/k8scheck/*.go) tools/k8scheck/go.mod tools/k8scheck/go.sum
	cd tools/k8scheck && $(GO) build -o $(abspath $@) .

# Debian's packages, those missing installed in one apt-get run after
# Maven's (make -j runs targets side by side; dpkg takes one at a time):
# - Maven (with a JDK) for the plugin and the YARN cluster: `maven`, all the
#   plugin's build needs (the image's build stage runs `make plugin`);
# - a JVM (Java 17) for PySpark;
# - libjpeg-turbo and libdeflate, opened at run time (dlopen) for JPEG
#   decoding and PNG inflating; without them the binary decodes with Go's
#   image/jpeg and image/png;
# - OpenCV's Haar cascades for detect_faces (opencv-data);
# - shellcheck for lint-sh;
# - buildah and debootstrap for `make image` and tests/test_image.py (a
#   local Debian base, as Docker Hub is out of reach here).
maven:
	@command -v mvn >/dev/null || { apt-get update -q && apt-get install -y -q maven; }

debs: maven
	@missing=; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	ldconfig -p | grep -q 'libturbojpeg\.so\.0 ' || missing="$$missing libturbojpeg0"; \
	ldconfig -p | grep -q 'libdeflate\.so\.0 ' || missing="$$missing libdeflate0"; \
	test -f $(CASCADES)/haarcascade_frontalface_default.xml || missing="$$missing opencv-data"; \
	command -v shellcheck >/dev/null || missing="$$missing shellcheck"; \
	command -v buildah >/dev/null || missing="$$missing buildah"; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	if [ -n "$$missing" ]; then apt-get update -q && apt-get install -y -q $$missing; fi

# pip's --no-compile here and below: Python compiles what is imported, once;
# compiling every module of pyspark, scipy and the rest up front costs more
# CPU than the tests use.
venv: $(VENV)/.installed

$(VENV)/.installed: python/requirements.txt python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --no-compile -r python/requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-compile --no-deps -e python
	touch $@

data: $(IMAGES)/.made

$(IMAGES)/.made: scripts/make_images.py $(VENV)/.installed
	$(PY) scripts/make_images.py $(IMAGES)
	touch $@

# make test, in two parts of jobs side by side (docs/testing.md has what
# each takes): the Go tests beside the builds (pip, Maven, the binary, the
# wheel), then the Python suite (two workers) beside the version matrix's
# legs, one after another. Output is shown a job at a time, when it ends.
test:
	$(MAKE) -j4 --output-sync=target test-go $(PY_SETUP) $(MATRIX_SETUP)
	$(MAKE) -j2 --output-sync=target test-py test-matrix

# Every shell script (spark-conf's bootstrap and init actions, scripts/):
# bash -n, then shellcheck at warning level and above. spark-conf/testdata
# holds bad ones on purpose.
SH_SCRIPTS = $(shell find . -name '*.sh' -not -path './.venv/*' -not -path './build/*' -not -path './spark-conf/testdata/*' | sort)
lint-sh: build/.lint-sh

build/.lint-sh: $(SH_SCRIPTS) | debs
	@for f in $(SH_SCRIPTS); do bash -n "$$f" || exit 1; done
	shellcheck --severity=warning $(SH_SCRIPTS)
	@mkdir -p $(@D) && touch $@

# Each build configuration is compiled once: the shipped one (SIMD on
# amd64, as bin/pixelflight and bin/pixelflight-cuda are built) vets and
# tests everything, fuzz targets' seed corpora included; the race
# detector's, without SIMD, runs the concurrent packages; the portable
# scalar build (no SIMD, no cgo: no C loops) every kernels package
# against the same references (-short: haar's photos at one scale);
# imageio without cgo (Go's own decoders); and the packages that do
# pointer arithmetic (the SIMD loops of kernels, the nvJPEG binding)
# under checkptr, which stops on a pointer outside its allocation.
RACE_PKGS := ./sched/ ./server/ ./loadgen/ ./udf/
test-go: debs cuda-check
	GOEXPERIMENT=$(SIMD) $(GO) vet ./...
	GOEXPERIMENT=$(SIMD) $(GO) test -count=1 ./...
	CGO_ENABLED=0 $(GO) vet ./kernels/...
	$(GO) test -count=1 -race $(RACE_PKGS)
	CGO_ENABLED=0 $(GO) test -count=1 -short ./kernels/...
	GOEXPERIMENT=$(SIMD) $(GO) test -count=1 -gcflags=all=-d=checkptr ./kernels/ ./kernels/fft/ ./cuda/nvjpeg/
	GOEXPERIMENT=$(SIMD) $(GO) test -count=1 -short -gcflags=all=-d=checkptr ./kernels/blob/ ./kernels/watershed/
	CGO_ENABLED=0 $(GO) test -count=1 ./imageio/

# The quick check after a change (docs/testing.md): every Go test of the
# shipped build, the race detector's packages and the portable kernels
# (go test's cache skips what the change did not touch), the cuda build's
# vet and compile, and the Python tests marked `check` (tests/: the
# modules and tests that have caught this repository's regressions), on
# two workers.
check: build plugin venv data debs lint-sh cuda-check $(K8SCHECK)
	GOEXPERIMENT=$(SIMD) $(GO) vet ./...
	GOEXPERIMENT=$(SIMD) $(GO) test ./...
	$(GO) test -race $(RACE_PKGS)
	CGO_ENABLED=0 $(GO) test -short ./kernels/...
	$(PY) -m pytest -q $(PYTEST_XDIST) -m check tests

# Coverage-guided fuzzing, FUZZTIME per target (make test runs only the
# seed corpora, testdata/fuzz included, as plain tests).
fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

# The Python suite under pytest-xdist: two workers, a module to each at a
# time (tests/conftest.py hands out the slowest first); the modules' own
# clusters and Spark sessions stay in one process.
PYTEST_XDIST := -n 2 --dist loadfile --no-loadscope-reorder
PY_SETUP     := build build-cuda plugin wheel yarn-cluster venv data debs lint-sh $(K8SCHECK)
test-py: $(PY_SETUP)
	$(PY) -m pytest -q $(PYTEST_XDIST) --durations=15 tests

# The version matrix's other legs (the full suite runs on the pinned pyspark
# of python/requirements.txt): the end-to-end, plugin and fault tests
# marked `matrix` on Spark 3.5 and the newest 4.x, and the data source's
# `matrix` tests (with the jar's Spark 3.5 build) on 3.5 (what EMR and
# Dataproc run), each in its own venv (tests/matrix/spark-*.txt) with the
# client and the jars from the platform wheel; the `connect` ones (map_images,
# the plugin and the data source) over Spark Connect (remote("local[2]")) on
# the pinned 4.x, the newest and 3.5.
# 3.5's local Connect server needs spark-connect_2.12 on the JVM's
# classpath (in 4.x it is in pyspark): 3.5.6's is not on Maven Central, so
# 3.5.5's, the newest 3.5 one on a 3.5.6 pyspark; with the plugin jar, as
# --jars of PYSPARK_SUBMIT_ARGS (3.5 applies a Connect session's
# spark.jars after the JVM is up, too late for spark.plugins).
MATRIX       := 3.5 4.3
MATRIX_TESTS := tests/test_spark.py tests/test_plugin.py tests/test_faults.py tests/test_status_details.py
MATRIX_35    := tests/test_datasource.py
CONNECT35    := build/spark-connect-3.5/spark-connect_2.12-3.5.5.jar

$(CONNECT35): | maven $(YARN_CP)
	scripts/mvn.sh org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
		-Dartifact=org.apache.spark:spark-connect_2.12:3.5.5 -DoutputDirectory=$(@D)

# After the main venv (| order): most of their pins are its, then in pip's cache.
build/venv-spark%/.installed: tests/matrix/spark-%.txt | $(VENV)/.installed
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install -q --disable-pip-version-check --no-compile -r $<
	touch $@

MATRIX_SETUP := $(MATRIX:%=build/venv-spark%/.installed) $(CONNECT35)
test-matrix: build plugin wheel venv data debs $(MATRIX_SETUP)
	PIXELFLIGHT_TEST_CONNECT=1 $(PY) -m pytest -q -m connect tests/test_spark.py tests/test_plugin.py tests/test_datasource.py
	for v in $(MATRIX); do \
		py=$(abspath build)/venv-spark$$v/bin/python; \
		$$py -m pip install -q --disable-pip-version-check --no-compile --no-deps --force-reinstall build/dist/pixelflight-*.whl || exit 1; \
		more=; if [ $$v = 3.5 ]; then more="$(MATRIX_35)"; fi; \
		PYSPARK_PYTHON=$$py $$py -m pytest -q -m matrix $(MATRIX_TESTS) $$more || exit 1; \
	done
	PYSPARK_PYTHON=$(abspath build/venv-spark4.3/bin/python) PIXELFLIGHT_TEST_CONNECT=1 \
		build/venv-spark4.3/bin/python -m pytest -q -m connect tests/test_spark.py tests/test_plugin.py \
		tests/test_datasource.py
	PYSPARK_PYTHON=$(abspath build/venv-spark3.5/bin/python) PIXELFLIGHT_TEST_CONNECT=1 \
		PYSPARK_SUBMIT_ARGS="--jars $(abspath $(CONNECT35)),$(abspath $(PLUGIN_35)) pyspark-shell" \
		build/venv-spark3.5/bin/python -m pytest -q -m connect tests/test_spark.py tests/test_plugin.py \
		tests/test_datasource.py

demo: build venv data debs
	scripts/demo.sh

# The data source against binaryFile + map_images: images/s and executor
# CPU per image (figures go to BENCHMARKS.md, "The data source").
bench-datasource: build plugin venv debs
	$(PY) scripts/dsbench.py

# Peers (not in make test): pixelflight's Spark paths against Daft, Ray Data
# and a process pool, on the same cores and 960 JPEGs, images/s (figures go
# to BENCHMARKS.md, "Peers"; JSON in build/peers.json). In a venv of its own
# (scripts/peers/requirements.txt), with the client, binary and jars from
# the platform wheel; after the main venv (| order), whose pins pip's cache holds.
PEERS_VENV := build/venv-peers
.PHONY: bench-peers
$(PEERS_VENV)/.installed: scripts/peers/requirements.txt $(WHEEL) | $(VENV)/.installed
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install -q --disable-pip-version-check --no-compile -r $<
	$(@D)/bin/python -m pip install -q --disable-pip-version-check --no-compile --no-deps --force-reinstall build/dist/pixelflight-*.whl
	touch $@

bench-peers: build plugin wheel data debs $(PEERS_VENV)/.installed
	PYSPARK_PYTHON=$(abspath $(PEERS_VENV))/bin/python $(PEERS_VENV)/bin/python scripts/peers/peers.py

# The row path: host cost of the GPU path and defaults against a --workers
# sweep (sim backend), additivity, batching across streams,
# memory under --memory-budget (figures go to BENCHMARKS.md).
bench-sched: build data
	$(PY) scripts/schedbench.py

bench: build venv data
	GO=$(GO) SIMD=$(SIMD) $(PY) scripts/convbench.py
	$(PY) scripts/bench.py --images $(IMAGES)/good

# testdata: regenerate the scipy / scikit-image references the Go tests compare with.
testdata: venv
	$(PY) scripts/convref.py udf/testdata/fftconvolve_ref.json
	$(PY) scripts/blobref.py
	$(PY) scripts/watershedref.py
	$(PY) scripts/haarref.py
	$(PY) scripts/jpegref.py

clean:
	rm -rf bin build spark-plugin/target

# The CUDA build, pixelflight-cuda (-tags cuda: gorgonia.org/cu, cuFFT, the
# kernels' PTX embedded), and what can be checked of it without a GPU.
# NVIDIA's PyPI wheels (cuda/requirements-cuda.txt, in their own venv) give
# cuda.h, NVRTC, ptxas and libcufft.so.11 (which pixelflight-cuda opens at
# run time, as libcufft.so.12 where the driver is CUDA 13's); a stub libcuda.so.1
# built from cuda.h's declarations (every function returns an error)
# stands in for the driver at link time only. Nothing here runs on a GPU.
#   make cuda-check     PTX (NVRTC) checked by ptxas for sm_52..sm_100; go vet and
#                       go build -tags cuda (nothing NEEDs cuFFT or nvJPEG: opened
#                       at run time); the cuda tests compiled (-c), not run;
#                       cuda/nvjpeg's C declarations against the wheel's nvjpeg.h
#   make build-cuda     bin/pixelflight-cuda (the image ships it beside bin/pixelflight)
#   make test-cuda-emu  the kernels compiled as C++ and run on the CPU: the
#                       conformance suites, the fault path, launch choice
#                       (also part of `go test ./...`, so of make test)
# On a machine with a GPU and its driver only (run on one H100, 2026-11-24):
#   make test-cuda-gpu  the conformance suite on the GPU too; no GPU is a failure
#   make bench-cuda     BenchmarkConvolve/cuda-512-{stats,f32,png} and
#                       BenchmarkBlobs/cuda-512 (BENCHMARKS.md)
# For a GPU machine without Go (built here, run there):
#   make gpu-kit        build/gpu-kit: run `bash build/gpu-kit/gpu-check.sh OUT`
#                       there (conformance on the GPU, host cost, --workers
#                       sweep and bench with --backend cuda; scripts/gpu-check.sh)
CUDA_VENV := build/cuda-venv
CUDA_STUB := build/cuda-stub
CUDA_PTX  := cuda/kernels.ptx
CUDA_SRC  := cuda/gpukernels/kernels.cu.h
# Evaluated when used, once the venv exists.
CUDA_NV    = $(firstword $(wildcard $(abspath $(CUDA_VENV))/lib/python3*/site-packages/nvidia))
CUDA_GOENV = GOEXPERIMENT=$(SIMD) CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations -I$(CUDA_NV)/cuda_runtime/include -I$(CUDA_NV)/cuda_nvcc/include" CGO_LDFLAGS="-L$(abspath $(CUDA_STUB))"
PTX_ARCHS := sm_52 sm_75 sm_80 sm_90 sm_100

.PHONY: cuda-sdk cuda-ptx cuda-check build-cuda test-cuda-emu test-cuda-gpu bench-cuda

cuda-sdk: $(CUDA_VENV)/.installed

$(CUDA_VENV)/.installed: cuda/requirements-cuda.txt
	test -x $(CUDA_VENV)/bin/python || $(PYTHON) -m venv $(CUDA_VENV)
	$(CUDA_VENV)/bin/python -m pip install -q --disable-pip-version-check --no-compile --no-deps -r cuda/requirements-cuda.txt
	touch $@

# The link-time stand-ins: libcuda.so (soname libcuda.so.1) with every cu*
# function cuda.h declares, after its _v2 renames.
$(CUDA_STUB)/libcuda.so: $(CUDA_VENV)/.installed
	mkdir -p $(CUDA_STUB)
	$(CC) -E -P -I$(CUDA_NV)/cuda_runtime/include $(CUDA_NV)/cuda_runtime/include/cuda.h \
		| grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' | sort -u \
		| awk '{print "int " $$1 "(void) { return 999; /* CUDA_ERROR_UNKNOWN */ }"}' > $(CUDA_STUB)/libcuda.c
	$(CC) -shared -fPIC -Wl,-soname,libcuda.so.1 -o $@ $(CUDA_STUB)/libcuda.c

cuda-ptx: $(CUDA_PTX)

$(CUDA_PTX): $(CUDA_SRC) cuda/tools/ptx.py $(CUDA_VENV)/.installed
	$(CUDA_VENV)/bin/python cuda/tools/ptx.py --nvrtc $(CUDA_NV)/cuda_nvrtc/lib/libnvrtc.so.12 --arch compute_52 --werror -o $@.tmp $(CUDA_SRC)
	for a in $(PTX_ARCHS); do $(CUDA_NV)/cuda_nvcc/bin/ptxas -arch=$$a -o /dev/null $@.tmp || exit 1; done
	mv $@.tmp $@

build-cuda: bin/pixelflight-cuda

bin/pixelflight-cuda: $(GOSRC) $(CUDA_PTX) $(CUDA_STUB)/libcuda.so
	$(CUDA_GOENV) $(GO) build -tags cuda -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/pixelflight

cuda-check: $(CUDA_PTX) $(CUDA_STUB)/libcuda.so
	$(CUDA_GOENV) $(GO) vet -tags cuda ./...
	$(CUDA_GOENV) $(GO) build -tags cuda ./...
	mkdir -p build/cuda-check
	$(CUDA_GOENV) $(GO) build -tags cuda -o build/cuda-check/pixelflight-cuda ./cmd/pixelflight
	readelf -d build/cuda-check/pixelflight-cuda | grep -q 'NEEDED.*\[libcuda.so.1\]'
	! readelf -d build/cuda-check/pixelflight-cuda | grep -q 'NEEDED.*libcufft'
	grep -aq 'libcufft.so.12' build/cuda-check/pixelflight-cuda && grep -aq 'libcufft.so.11' build/cuda-check/pixelflight-cuda
	! readelf -d build/cuda-check/pixelflight-cuda | grep -q 'NEEDED.*libnvjpeg'
	grep -aq 'libnvjpeg.so.13' build/cuda-check/pixelflight-cuda && grep -aq 'libnvjpeg.so.12' build/cuda-check/pixelflight-cuda
	$(CUDA_GOENV) $(GO) test -tags cuda -run XXX -c -o build/cuda-check/ ./cuda/
	$(CC) -fsyntax-only -I$(CUDA_NV)/nvjpeg/include -I$(CUDA_NV)/cuda_runtime/include -I$(CUDA_NV)/cuda_nvcc/include cuda/nvjpeg/testdata/headercheck.c
	@echo "cuda-check: PTX checked for $(PTX_ARCHS); vet, build and test binaries of -tags cuda OK; nvjpeg's declarations match nvjpeg.h (nothing ran on a GPU)"

test-cuda-emu:
	$(GO) test -count=1 ./cuda/...

# libcuda.so.1 from the driver at run time (never the stub); libcufft from the wheel.
CUDA_RUN = LD_LIBRARY_PATH=$(CUDA_NV)/cufft/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}

test-cuda-gpu: $(CUDA_PTX) $(CUDA_STUB)/libcuda.so
	$(CUDA_GOENV) $(CUDA_RUN) $(GO) test -tags cuda -count=1 -v -run 'Conformance|Fault|Accepts' ./cuda/

bench-cuda: $(CUDA_PTX) $(CUDA_STUB)/libcuda.so
	$(CUDA_GOENV) $(CUDA_RUN) $(GO) test -tags cuda -run '^$$' -bench 'Convolve/cuda-512|ConvolveMethod|Blobs/cuda-512' -benchtime=20x -count=3 ./cuda/

# A kit for a GPU machine that has no Go (the device tool's carry is 64 MiB):
# the cuda build, its test binary, the libraries it opens at run time, the
# cascades, the test images and schedbench.py, in build/gpu-kit/kit.tar.gz,
# with scripts/gpu-check.sh beside it, which runs everything there.
GPU_KIT := build/gpu-kit
SKDATA   = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/skimage/data))
.PHONY: gpu-kit
gpu-kit: build-cuda venv data debs
	rm -rf $(GPU_KIT) && mkdir -p $(GPU_KIT)/t/bin $(GPU_KIT)/t/lib $(GPU_KIT)/t/cuda $(GPU_KIT)/t/scripts \
		$(GPU_KIT)/t/$(IMAGES) $(GPU_KIT)/t/$(SKDATA) $(GPU_KIT)/t/imageio/testdata
	$(CUDA_GOENV) $(GO) test -tags cuda -c -o $(GPU_KIT)/t/bin/cuda.test ./cuda/
	cp bin/pixelflight-cuda $(GPU_KIT)/t/bin/
	for l in libturbojpeg.so.0 libdeflate.so.0; do \
		cp -L "$$(ldconfig -p | awk -v l=$$l '$$1 == l && /x86-64/ {print $$NF; exit}')" $(GPU_KIT)/t/lib/ || exit 1; done
	cp -r $(CASCADES) $(GPU_KIT)/t/cascades
	cp -r $(IMAGES)/photo512 $(IMAGES)/photo1080 $(IMAGES)/faces $(GPU_KIT)/t/$(IMAGES)/
	cp -r imageio/testdata/jpeg $(GPU_KIT)/t/imageio/testdata/
	cp $(SKDATA)/coins.png $(SKDATA)/astronaut.png $(GPU_KIT)/t/$(SKDATA)/
	cp scripts/schedbench.py $(GPU_KIT)/t/scripts/
	tar -czf $(GPU_KIT)/kit.tar.gz -C $(GPU_KIT)/t . && rm -rf $(GPU_KIT)/t
	cp scripts/gpu-check.sh $(GPU_KIT)/
	du -sh $(GPU_KIT)/kit.tar.gz

# The container image (Dockerfile) from what build, build-cuda and plugin
# made (ARTIFACTS=prebuilt; scripts/image.sh assembles its context under
# build/image), with docker, podman or buildah, whichever is here; with
# buildah on a local Debian base made once by debootstrap. Push it with
# `docker push` / `podman push` / `scripts/buildah.sh push IMAGE docker://REGISTRY/pixelflight:TAG`.
# tests/test_image.py builds and runs it (make test).
IMAGE ?= pixelflight:$(VERSION)
.PHONY: image
image: build build-cuda plugin
	scripts/image.sh $(IMAGE)

# Soak (not in make test): one sidecar under 32 streams of good and bad
# images for SOAK_MINUTES; every row checked; RSS, goroutines and open files
# sampled over time; a verdict, non-zero on failure (BENCHMARKS.md "Soak").
SOAK_MINUTES ?= 5
.PHONY: soak
soak: build venv data
	$(PY) scripts/soak.py --minutes $(SOAK_MINUTES)
