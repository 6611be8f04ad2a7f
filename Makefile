# j2k_cuda top-level build. `make help` lists the targets.
#
#   make            libj2kcuda + j2kc tool (build/core), then ffmpeg/ffprobe with j2k_cuda (build/ffmpeg)
#   make demo       DCI 4K encode/decode of a generated clip, GPU when present else CPU
#   make test       every test: core ctest, FATE (backend=cpu), ffmpeg interop checks
#   make test-gpu   the GPU half: Gpu* core tests and FATE with backend=cuda
BUILD       ?= build
CUDA_ARCHS  ?= 75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual
JOBS        ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX      ?= /usr/local

CORE_DIR := $(BUILD)/core

# ---------------------------------------------------------------------------
# FFmpeg and ffnvcodec come from Debian's source packages, fetched through a
# private APT configuration in $(BUILD)/apt (the system's is not touched).
# When the pinned version is gone the newest one offered is used, with a
# warning. FFMPEG_SRC=/path builds against a tree of your own (patched in place).
FFMPEG_DEB_VERSION  ?= 7:8.1.2-2
FFMPEG_ORIG_SHA256  ?= 464beb5e7bf0c311e68b45ae2f04e9cc2af88851abb4082231742a74d97b524c
NVCODEC_DEB_VERSION ?= 12.1.14.0-1
NVCODEC_ORIG_SHA256 ?= 0ca1a0c85b149646fa6ce4d600584507fdccf5a23d58e668d8701e89cee0c3fb
FFMPEG_SRC          ?=

B         := $(abspath $(BUILD))
TOP       := $(CURDIR)
APT_DIR   := $(B)/apt
DEPS      := $(B)/deps
FF_BUILD  := $(B)/ffmpeg
NVC_SRC   := $(B)/src/nv-codec-headers
ifeq ($(strip $(FFMPEG_SRC)),)
FF_SRC    := $(B)/src/ffmpeg
FF_FETCH  := $(FF_SRC)/.debian-source
else
FF_SRC    := $(abspath $(FFMPEG_SRC))
FF_FETCH  := $(FF_SRC)/configure
endif
FFMPEG    := $(FF_BUILD)/ffmpeg
FFPROBE   := $(FF_BUILD)/ffprobe
J2KC_LIB  ?= $(abspath $(CORE_DIR))/cuda/libj2kcuda.a
J2KC_TOOL := $(CORE_DIR)/cuda/j2kc

NVCC        ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME   ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib) $(CUDA_HOME)/lib64)

# A clean environment for sub-makes of other projects: our command-line
# variables (BUILD, PREFIX, ...) must not leak into them.
SUBMAKE := env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u MAKELEVEL make

comma := ,

# libopenjpeg is a peer we compare against; linked statically when present so
# the binary runs on the GPU machine, which has no openjpeg installed.
OPJ_LIBDIR := $(shell pkg-config --variable=libdir libopenjp2 2>/dev/null)
OPJ_STATIC := $(if $(OPJ_LIBDIR),$(wildcard $(OPJ_LIBDIR)/libopenjp2.a))
# scale_cuda and friends compile their kernels with clang (cuda_llvm), not nvcc.
CLANG      := $(shell command -v clang 2>/dev/null)

FF_COMPONENTS := \
  --enable-encoder=j2k_cuda,jpeg2000,rawvideo,wrapped_avframe$(if $(OPJ_STATIC),$(comma)libopenjpeg) \
  --enable-decoder=j2k_cuda,jpeg2000,rawvideo,wrapped_avframe \
  --enable-parser=jpeg2000 \
  --enable-demuxer=image2,image2pipe,image_j2k_pipe,mov,mxf,matroska,nut,rawvideo \
  --enable-muxer=image2,image2pipe,mxf,mov,matroska,nut,rawvideo,framecrc,framemd5,md5,crc,null \
  --enable-protocol=file,pipe,fd \
  --enable-indev=lavfi \
  --enable-filter=testsrc,testsrc2,color,null,format,scale,fps,trim,setpts,split,crop,psnr,loop,setsar,setparams,hwupload_cuda,hwdownload,scale_cuda,anull,aformat,aresample,atrim
FF_CONFIGURE_FLAGS := \
  --disable-everything --disable-autodetect --disable-doc --disable-debug \
  --disable-network --disable-x86asm --disable-ffplay --enable-ffmpeg --enable-ffprobe \
  --enable-static --disable-shared --pkg-config-flags=--static \
  --enable-nonfree --enable-libj2kcuda \
  --enable-ffnvcodec $(if $(CLANG),--enable-cuda-llvm) \
  $(if $(OPJ_STATIC),--enable-libopenjpeg) \
  --extra-cflags=-I$(DEPS)/include --extra-ldflags=-L$(DEPS)/lib \
  $(FF_COMPONENTS) $(FF_EXTRA_CONFIGURE)

# The wrapper sources and FATE files the patch script copies into the tree.
WRAPPER_FILES := $(wildcard libavcodec/*.c libavcodec/*.h fate/*.mak fate/ref/* fate/data/*) \
                 $(wildcard configure-patch/*.patch) configure-patch/apply.sh

.PHONY: FORCE all core ffmpeg ffmpeg-fetch ffmpeg-configure demo test test-core test-fate test-ffmpeg \
        test-gpu test-gpu-core fate-gpu fate-gen fate-bundle bench bench-prep bench-readme install help clean distclean \
        test-sanitize test-fuzz check-archs

all: core ffmpeg

# ---------------------------------------------------------------------------
# The core library and its tests.
$(CORE_DIR)/build.ninja:
	cmake -S . -B $(CORE_DIR) -G Ninja -DCMAKE_CUDA_ARCHITECTURES="$(CUDA_ARCHS)" $(CMAKE_FLAGS)

core: $(CORE_DIR)/build.ninja
	ninja -C $(CORE_DIR) -j $(JOBS)

test-core: core
	cd $(CORE_DIR) && ctest --output-on-failure -j $(JOBS)

# The GPU half (Gpu* tests) on a CUDA machine; the rest skip without one.
test-gpu-core: core
	cd $(CORE_DIR) && GTEST_FILTER='Gpu*:*/Gpu*:*.Gpu*' ctest --output-on-failure

# ---------------------------------------------------------------------------
# FFmpeg with j2k_cuda.
$(B)/src/ffmpeg/.debian-source:
	scripts/fetch-debian-source.sh $(APT_DIR) $(B)/src/ffmpeg ffmpeg $(FFMPEG_DEB_VERSION) $(FFMPEG_ORIG_SHA256)

$(NVC_SRC)/.debian-source:
	scripts/fetch-debian-source.sh $(APT_DIR) $(NVC_SRC) nv-codec-headers $(NVCODEC_DEB_VERSION) $(NVCODEC_ORIG_SHA256)

$(DEPS)/lib/pkgconfig/ffnvcodec.pc: $(NVC_SRC)/.debian-source
	$(SUBMAKE) -C $(NVC_SRC) install PREFIX=$(DEPS) >/dev/null

ffmpeg-fetch: $(FF_FETCH) $(DEPS)/lib/pkgconfig/ffnvcodec.pc

# pkg-config file for FFmpeg's configure; the archive itself is linked from
# the core's build folder through $(DEPS)/lib.
$(DEPS)/lib/pkgconfig/j2kcuda.pc: $(FF_FLAGS_FILE)
	@mkdir -p $(@D)
	@printf '%s\n' \
	  'prefix=$(DEPS)' \
	  'libdir=$${prefix}/lib' \
	  'includedir=$(TOP)/cuda/include' \
	  '' \
	  'Name: j2kcuda' \
	  'Description: JPEG 2000 (ISO/IEC 15444-1) encoder and decoder with a CUDA backend' \
	  'Version: 0.1.0' \
	  'Libs: -L$${libdir} -lj2kcuda' \
	  'Libs.private: -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -lpthread -ldl -lrt -lm' \
	  'Cflags: -I$${includedir}' > $@
	@echo "wrote $@"

# The archive is linked in from wherever J2KC_LIB points; by default it is
# the core's, built first.
J2KC_LIB_DEFAULT := $(abspath $(CORE_DIR))/cuda/libj2kcuda.a
CORE_FOR_FFMPEG  := $(if $(filter $(J2KC_LIB_DEFAULT),$(J2KC_LIB)),core)
define LINK_J2KC
	@test -f $(J2KC_LIB) || { echo "$(J2KC_LIB) is missing: run 'make core' (or pass J2KC_LIB=/path/libj2kcuda.a)"; exit 1; }
	@mkdir -p $(DEPS)/lib && ln -sf $(J2KC_LIB) $(DEPS)/lib/libj2kcuda.a
endef

$(DEPS)/lib/libopenjp2.a:
	@mkdir -p $(@D)
	$(if $(OPJ_STATIC),ln -sf $(OPJ_STATIC) $@,@echo "libopenjp2-7-dev not installed: building without libopenjpeg")

# Reconfigure only when the configure line itself changes.
FF_FLAGS_FILE := $(FF_BUILD)/.j2kc-configure-flags
$(FF_FLAGS_FILE): FORCE
	@mkdir -p $(@D)
	@echo '$(FF_SRC) $(FF_CONFIGURE_FLAGS)' > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
FORCE:

$(FF_SRC)/.j2kcuda-patched: $(FF_FETCH) $(WRAPPER_FILES)
	configure-patch/apply.sh $(FF_SRC)
	@touch $@

$(FF_BUILD)/ffbuild/config.mak: $(FF_SRC)/.j2kcuda-patched $(DEPS)/lib/pkgconfig/j2kcuda.pc \
                                 $(DEPS)/lib/pkgconfig/ffnvcodec.pc $(FF_FLAGS_FILE) \
                                 $(if $(OPJ_STATIC),$(DEPS)/lib/libopenjp2.a) | $(CORE_FOR_FFMPEG)
	$(LINK_J2KC)
	@echo "configuring FFmpeg ($$(cat $(FF_SRC)/VERSION 2>/dev/null || cat $(FF_SRC)/RELEASE)) in $(FF_BUILD)"
	cd $(FF_BUILD) && PKG_CONFIG_PATH=$(DEPS)/lib/pkgconfig$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH} \
	  $(FF_SRC)/configure $(FF_CONFIGURE_FLAGS) > configure.log 2>&1 || \
	  { tail -n 30 configure.log; echo "FFmpeg configure failed: see $(FF_BUILD)/ffbuild/config.log"; exit 1; }
	@grep -q '^#define CONFIG_J2K_CUDA_ENCODER 1' $(FF_BUILD)/config_components.h || \
	  { echo "FFmpeg configure left j2k_cuda out: see $(FF_BUILD)/ffbuild/config.log"; exit 1; }

ffmpeg-configure: $(FF_BUILD)/ffbuild/config.mak

ffmpeg: $(CORE_FOR_FFMPEG) $(FF_BUILD)/ffbuild/config.mak
	$(LINK_J2KC)
	@# FFmpeg's make does not track external archives: relink when the core changed.
	@if [ $(J2KC_LIB) -nt $(FF_BUILD)/ffmpeg_g ] || [ "$$(cat $(FF_BUILD)/.j2kc-lib 2>/dev/null)" != "$(J2KC_LIB)" ]; then \
	  rm -f $(FF_BUILD)/ffmpeg_g $(FF_BUILD)/ffprobe_g; echo "$(J2KC_LIB)" > $(FF_BUILD)/.j2kc-lib; fi
	configure-patch/apply.sh $(FF_SRC) >/dev/null
	$(SUBMAKE) -C $(FF_BUILD) -j$(JOBS) ffmpeg ffprobe
	@echo "built $(FFMPEG) and $(FFPROBE)"
	@ldd $(FFMPEG) | grep -q 'libcuda\.' && { echo "error: $(FFMPEG) links libcuda"; exit 1; } || true

# ---------------------------------------------------------------------------
# Demo and tests.
demo: all
	FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) OUT=$(B)/demo scripts/demo.sh

FATE_ARGS = SAMPLES= -k -j$(JOBS)

test-fate: all
	$(SUBMAKE) -C $(FF_BUILD) $(FATE_ARGS) fate-j2k_cuda

test-ffmpeg: all
	FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) OUT=$(B)/test-ffmpeg scripts/ffmpeg-checks.sh

# Every test, with one closing summary line.
test: all
	BUILD=$(B) CORE_DIR=$(abspath $(CORE_DIR)) FF_BUILD=$(FF_BUILD) FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) \
	  JOBS=$(JOBS) scripts/run-tests.sh all

# Robustness (issue #5). The GoogleTest suite built with ASan+UBSan (leak
# checks included), CPU tests; SAN_MODE=full drops quick mode's two slow host
# sweeps. And each libFuzzer target (clang) run FUZZ_SECONDS on its seeds.
# Each builds in its own folder, for one GPU architecture (the tests run on
# the CPU). CI (.ci/run) runs both after `make test`.
SAN_MODE     ?= quick
FUZZ_SECONDS ?= 60
test-sanitize:
	BUILD=$(B)/sanitize JOBS=$(JOBS) CUDA_ARCHS=90-real scripts/sanitize.sh $(SAN_MODE)

test-fuzz:
	BUILD=$(B)/fuzz JOBS=$(JOBS) CUDA_ARCHS=90-real scripts/fuzz.sh $(FUZZ_SECONDS)

# Regenerate the FATE references from a real run (CPU backend) into fate/ref/.
fate-gen: all
	rm -f $(FF_SRC)/tests/ref/fate/j2k_cuda-*
	@# Tests that share a reference (lossless against the source, j2k_cuda
	@# against the native decoder) are checked afterwards, never generated.
	$(SUBMAKE) -C $(FF_BUILD) -k -j$(JOBS) SAMPLES= GEN=1 \
	  $$($(SUBMAKE) -C $(FF_BUILD) -s SAMPLES= fate-list | grep '^fate-j2k_cuda-' | grep -v -e '^fate-j2k_cuda-lossless-' -e '-native$$')
	$(SUBMAKE) -C $(FF_BUILD) -k -j$(JOBS) SAMPLES= fate-j2k_cuda
	mkdir -p fate/ref && rm -f fate/ref/j2k_cuda-* && cp $(FF_SRC)/tests/ref/fate/j2k_cuda-* fate/ref/
	@echo "fate/ref: $$(ls fate/ref | wc -l) references"

fate-gpu: all
	$(SUBMAKE) -C $(FF_BUILD) $(FATE_ARGS) fate-j2k_cuda-gpu

test-gpu: core
	BUILD=$(B) CORE_DIR=$(abspath $(CORE_DIR)) FF_BUILD=$(FF_BUILD) FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) \
	  JOBS=$(JOBS) scripts/run-tests.sh gpu

# A self-contained FATE runner (ffmpeg, ffprobe, references, data) for a
# machine without the FFmpeg build tree: $(BUILD)/fate-bundle/run.sh [cpu|cuda].
fate-bundle: all
	FF_SRC=$(FF_SRC) FF_BUILD=$(FF_BUILD) scripts/fate-bundle.sh $(B)/fate-bundle

# ---------------------------------------------------------------------------
# Benchmark against the peers (scripts/bench/). bench-prep fills BENCH_DIR
# here (it needs the network: Debian packages, PyPI wheels); bench runs on the
# CUDA machine from BENCH_DIR alone and writes BENCH_OUT; bench-readme puts
# BENCH_OUT/results.md's summary into README's Performance section.
# BENCH_ARGS: run.py's options, e.g. --budget SECONDS (default 415), or a dry
# run of every command off the GPU machine: BENCH_ARGS='--cpu --small 4 --quick'.
BENCH_DIR ?= $(BUILD)/bench
BENCH_OUT ?= $(BUILD)/bench-out
BENCH_ARGS ?=

# BENCH_NO_BUILD=1 takes J2KC_LIB and FFMPEG as they are (no `make all` first).
bench-prep: $(if $(BENCH_NO_BUILD),,all)
	BENCH_DIR=$(BENCH_DIR) BENCH_CACHE=$(B)/bench-cache CORE_LIB=$(J2KC_LIB) FFMPEG=$(FFMPEG) \
	  NVCC=$(NVCC) CUDA_LIBDIR=$(CUDA_LIBDIR) scripts/bench/prep.sh

# Only bin/j2kc_bench and bin/ffmpeg of a filled BENCH_DIR, from this tree (no network).
.PHONY: bench-bins
bench-bins: $(if $(BENCH_NO_BUILD),,all)
	BENCH_ONLY_BINS=1 BENCH_DIR=$(BENCH_DIR) CORE_LIB=$(J2KC_LIB) FFMPEG=$(FFMPEG) \
	  NVCC=$(NVCC) CUDA_LIBDIR=$(CUDA_LIBDIR) scripts/bench/prep.sh

bench:
	@test -x $(BENCH_DIR)/bin/j2kc_bench || { echo "$(BENCH_DIR) is empty: run 'make bench-prep' first"; exit 1; }
	PYTHONUNBUFFERED=1 python3 scripts/bench/run.py --dir $(BENCH_DIR) --out $(BENCH_OUT) $(BENCH_ARGS)

# BENCH_CHARTS=docs/bench also copies the charts and results.md there and shows them in README.
bench-readme:
	BENCH_CHARTS=$(BENCH_CHARTS) python3 scripts/bench/readme.py $(BENCH_OUT)/results.json README.md

# ---------------------------------------------------------------------------
# Every kernel must also build for the oldest architecture of CUDA_ARCHS (CI
# builds sm_90 only, and sm_80+ intrinsics need a fallback): compiles each
# .cu file of the core for CHECK_ARCH, without linking.
CHECK_ARCH ?= $(firstword $(subst ;, ,$(CUDA_ARCHS)))
check-archs:
	cmake -S . -B $(B)/archs -G Ninja -DCMAKE_CUDA_ARCHITECTURES="$(CHECK_ARCH)" $(CMAKE_FLAGS) > /dev/null
	ninja -C $(B)/archs -j$(JOBS) $$(ninja -C $(B)/archs -t targets all | grep -o '^cuda/[^:]*\.cu\.o' | sort -u)
	@echo "check-archs: every .cu file compiles for $(CHECK_ARCH)"

# ---------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(FFMPEG) $(FFPROBE) $(DESTDIR)$(PREFIX)/bin/
	$(if $(wildcard $(J2KC_TOOL)),install -m 755 $(J2KC_TOOL) $(DESTDIR)$(PREFIX)/bin/)
	install -m 644 $(J2KC_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 cuda/include/j2kc.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|^prefix=.*|prefix=$(PREFIX)|' -e 's|^includedir=.*|includedir=$${prefix}/include|' \
	  $(DEPS)/lib/pkgconfig/j2kcuda.pc > $(DESTDIR)$(PREFIX)/lib/pkgconfig/j2kcuda.pc

help:
	@echo "j2k_cuda targets:"
	@echo "  make               build libj2kcuda, the j2kc tool and ffmpeg/ffprobe with j2k_cuda"
	@echo "  make demo          encode a generated 4096x2160 XYZ clip to DCI 4K MXF with j2k_cuda, decode it"
	@echo "                     back, print fps, bytes/frame against the DCI cap and PSNR (GPU if present, else CPU)"
	@echo "  make test          every test: core ctest, FATE fate-j2k_cuda (backend=cpu), ffmpeg interop checks"
	@echo "  make test-gpu      on a CUDA machine: Gpu* core tests and FATE with backend=cuda (same references)"
	@echo "  make core          only the core: $(CORE_DIR)/cuda/libj2kcuda.a and $(J2KC_TOOL)"
	@echo "  make test-core     core ctest;  make test-gpu-core: its Gpu* half"
	@echo "  make ffmpeg        fetch (Debian source packages), patch, configure and build FFmpeg"
	@echo "  make test-fate     FATE: make -C $(FF_BUILD) fate-j2k_cuda  (fate-gpu: fate-j2k_cuda-gpu)"
	@echo "  make test-ffmpeg   ffmpeg/ffprobe/opj_* interop checks, hostile input to the wrapper"
	@echo "  make test-sanitize the GoogleTest suite under ASan+UBSan+LeakSanitizer, CPU tests ($(BUILD)/sanitize;"
	@echo "                     SAN_MODE=quick|full, default quick)"
	@echo "  make test-fuzz     libFuzzer targets fuzz_decoder, fuzz_jp2 (clang), FUZZ_SECONDS each (default 60;"
	@echo "                     a release run: FUZZ_SECONDS=3600); crashes land in $(BUILD)/fuzz/artifacts"
	@echo "  make fate-gen      regenerate fate/ref/ from a real run (CPU backend)"
	@echo "  make fate-bundle   $(BUILD)/fate-bundle/run.sh: FATE without the FFmpeg build tree (for the GPU machine)"
	@echo "  make bench-prep    fill BENCH_DIR=$(BENCH_DIR) for the benchmark: j2kc_bench, ffmpeg, Debian's opj/grk"
	@echo "                     tools, nvJPEG2000 wheels, photographs (needs the network)"
	@echo "  make bench         on a CUDA machine: j2k_cuda against nvJPEG2000, OpenJPEG, Grok and FFmpeg on the"
	@echo "                     same frames; table, results.json and PNG charts in BENCH_OUT=$(BENCH_OUT) (< 10 min)"
	@echo "  make bench-bins    refresh BENCH_DIR's j2kc_bench and ffmpeg from this tree (no network)"
	@echo "  make bench-readme  README's Performance section from BENCH_OUT/results.json"
	@echo "  make check-archs   compile every .cu file for the oldest CUDA_ARCHS entry ($(CHECK_ARCH)); CI runs it"
	@echo "  make install       install ffmpeg, ffprobe, j2kc, libj2kcuda.a, j2kc.h, j2kcuda.pc into PREFIX"
	@echo "  make clean         remove $(BUILD)/ (distclean: the same)"
	@echo "outputs: $(FFMPEG) $(FFPROBE) $(J2KC_TOOL) $(CORE_DIR)/cuda/libj2kcuda.a"
	@echo "variables:"
	@echo "  BUILD=$(BUILD) JOBS=$(JOBS) PREFIX=$(PREFIX)"
	@echo "  CUDA_ARCHS='$(CUDA_ARCHS)' (CI: 90-real)"
	@echo "  FFMPEG_DEB_VERSION=$(FFMPEG_DEB_VERSION) NVCODEC_DEB_VERSION=$(NVCODEC_DEB_VERSION)"
	@echo "  FFMPEG_SRC=/path (your own FFmpeg 7.1/8.x/9.0 tree, patched in place)  FF_EXTRA_CONFIGURE=..."
	@echo "  J2KC_LIB=$(J2KC_LIB)"

clean:
	rm -rf $(BUILD)

distclean: clean
