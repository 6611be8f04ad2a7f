# j2k_cuda top-level build. `make help` lists the targets.
#
#   make            libj2kcuda + j2kc tool (build/core), then the full FFmpeg with libj2kcuda (build/ffmpeg),
#                   shared and static, ffmpeg/ffprobe/ffplay, staged as an install tree in build/stage
#   make install    that tree into PREFIX
#   make demo       DCI 4K encode/decode of a generated clip, GPU when present else CPU
#   make test       every test: core ctest, FATE (backend=cpu), ffmpeg interop checks, ffplay, installed tree
#   make test-gpu   the GPU half: Gpu* core tests and FATE with backend=cuda
BUILD       ?= build
# The default architectures are the top CMakeLists.txt's (one place to change them).
CUDA_ARCHS  ?= $(shell sed -n 's/^ *set(CMAKE_CUDA_ARCHITECTURES "\(.*\)")/\1/p' CMakeLists.txt)
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
# The programs everything here runs (tests, demo, bundles): those of the
# staged install, the same tree `make install` gives.
STAGE     := $(B)/stage
FFMPEG    := $(STAGE)/bin/ffmpeg
FFPROBE   := $(STAGE)/bin/ffprobe
FFPLAY    := $(STAGE)/bin/ffplay
J2KC_LIB  ?= $(abspath $(CORE_DIR))/cuda/libj2kcuda.a
J2KC_TOOL := $(CORE_DIR)/cuda/j2kc

NVCC        ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME   ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib) $(CUDA_HOME)/lib64)

# A clean environment for sub-makes of other projects: our command-line
# variables (BUILD, PREFIX, ...) must not leak into them.
SUBMAKE := env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u MAKELEVEL make

# FFmpeg as its users know it: every native codec, format, filter, protocol and
# device, x86 assembly (nasm), ffmpeg, ffprobe and ffplay, shared and static
# libraries. Autodetection is off and every external library is named, so the
# result depends on the configure line alone, not on what happens to be
# installed: a missing -dev package (.ci/run lists them) stops configure.
FF_EXTERNAL := \
  --enable-zlib --enable-bzlib --enable-lzma --enable-iconv \
  --enable-sdl2 \
  --enable-libopenjpeg --enable-libzimg --enable-lcms2 --enable-libxml2 \
  --enable-libfreetype --enable-libharfbuzz --enable-libfribidi --enable-libfontconfig \
  --enable-libsoxr
# NVIDIA: the CUDA hardware context and filters, NVDEC/CUVID/NVENC (ffnvcodec
# loads the driver at run time, nothing links libcuda); scale_cuda and the
# other CUDA filters compile their kernels with clang (cuda_llvm), not nvcc.
FF_NVIDIA := --enable-ffnvcodec --enable-cuda --enable-cuvid --enable-nvdec --enable-nvenc --enable-cuda-llvm
# Programs and libraries find their libraries in ../lib relative to
# themselves, so an installed tree can be moved. DT_RPATH (not RUNPATH): it
# also serves the dependencies of the system libraries, which is what lets a
# folder that carries them in its lib/ (fate-bundle, bench-prep) run alone.
# $$ORIGIN loses one level of escaping to this Makefile, one to configure
# (which evaluates its flags in double quotes), one to each make expansion of
# config.mak's link lines (the libraries' rules go through $$(eval), so twice)
# and one to the shell; `make ffmpeg` checks that it arrives as $$ORIGIN.
FF_RPATH_EXE := -Wl,--disable-new-dtags,-rpath,'\\\$$\$$ORIGIN/../lib'
FF_RPATH_SO  := -Wl,--disable-new-dtags,-rpath,'\\\$$\$$\$$\$$ORIGIN/../lib'
FF_CONFIGURE_FLAGS := \
  --disable-autodetect --disable-doc --disable-debug \
  --enable-shared --enable-static \
  --enable-nonfree --enable-libj2kcuda \
  $(FF_EXTERNAL) $(FF_NVIDIA) \
  --extra-cflags=-I$(DEPS)/include --extra-ldflags=-L$(DEPS)/lib \
  --extra-ldexeflags=$(FF_RPATH_EXE) --extra-ldsoflags=$(FF_RPATH_SO) \
  $(FF_EXTRA_CONFIGURE)

# The wrapper sources and FATE files the patch script copies into the tree.
WRAPPER_FILES := $(wildcard libavcodec/*.c libavcodec/*.h fate/*.mak fate/ref/* fate/data/*) \
                 $(wildcard configure-patch/*.patch) configure-patch/apply.sh

.PHONY: FORCE all core core-lib ffmpeg ffmpeg-fetch ffmpeg-configure demo test test-core test-fate test-ffmpeg test-player test-install \
        test-gpu test-gpu-core fate-gpu fate-gen fate-bundle bench bench-prep bench-readme install help clean distclean \
        test-sanitize test-fuzz check-archs

all: core ffmpeg

# ---------------------------------------------------------------------------
# The core library and its tests.
$(CORE_DIR)/build.ninja:
	cmake -S . -B $(CORE_DIR) -G Ninja -DCMAKE_CUDA_ARCHITECTURES="$(CUDA_ARCHS)" $(CMAKE_FLAGS)

core: $(CORE_DIR)/build.ninja
	ninja -C $(CORE_DIR) -j $(JOBS)

# What FFmpeg and `make install` need of the core: the archive and the tool.
core-lib: $(CORE_DIR)/build.ninja
	ninja -C $(CORE_DIR) -j $(JOBS) j2kcuda $$(ninja -C $(CORE_DIR) -t targets all | grep -q '^j2kc:' && echo j2kc)

test-core: core
	cd $(CORE_DIR) && FFMPEG=$(FFMPEG) ctest --output-on-failure -j $(JOBS)

# The GPU half (Gpu* tests) on a CUDA machine; the rest skip without one.
test-gpu-core: core
	cd $(CORE_DIR) && GTEST_FILTER='Gpu*:*/Gpu*:*.Gpu*' ctest --output-on-failure

# ---------------------------------------------------------------------------
# FFmpeg with libj2kcuda.
$(B)/src/ffmpeg/.debian-source:
	scripts/fetch-debian-source.sh $(APT_DIR) $(B)/src/ffmpeg ffmpeg $(FFMPEG_DEB_VERSION) $(FFMPEG_ORIG_SHA256)

$(NVC_SRC)/.debian-source:
	scripts/fetch-debian-source.sh $(APT_DIR) $(NVC_SRC) nv-codec-headers $(NVCODEC_DEB_VERSION) $(NVCODEC_ORIG_SHA256)

$(DEPS)/lib/pkgconfig/ffnvcodec.pc: $(NVC_SRC)/.debian-source
	$(SUBMAKE) -C $(NVC_SRC) install PREFIX=$(DEPS) >/dev/null

ffmpeg-fetch: $(FF_FETCH) $(DEPS)/lib/pkgconfig/ffnvcodec.pc

# pkg-config file for FFmpeg's configure, pointing at the build tree: the
# archive is linked from wherever J2KC_LIB points through $(DEPS)/lib. The
# archive is static only, so what it needs is in Libs (FFmpeg links it into
# libavcodec.so without --static). `make install` writes the installed one
# from CMake (cmake/j2kcuda.pc.in). Rewritten only when its text changes.
J2KC_PC_LIBS := -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -lpthread -ldl -lrt -lm
$(DEPS)/lib/pkgconfig/j2kcuda.pc: FORCE
	@mkdir -p $(@D)
	@printf '%s\n' \
	  'prefix=$(DEPS)' \
	  'libdir=$${prefix}/lib' \
	  'includedir=$(TOP)/cuda/include' \
	  '' \
	  'Name: j2kcuda' \
	  'Description: JPEG 2000 (ISO/IEC 15444-1) encoder and decoder with a CUDA backend' \
	  'Version: 0.1.0' \
	  'Libs: -L$${libdir} -lj2kcuda $(J2KC_PC_LIBS)' \
	  'Cflags: -I$${includedir}' > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; echo "wrote $@"; fi

# The archive is linked in from wherever J2KC_LIB points; by default it is
# the core's, built first.
J2KC_LIB_DEFAULT := $(abspath $(CORE_DIR))/cuda/libj2kcuda.a
CORE_FOR_FFMPEG  := $(if $(filter $(J2KC_LIB_DEFAULT),$(J2KC_LIB)),core-lib)
define LINK_J2KC
	@test -f $(J2KC_LIB) || { echo "$(J2KC_LIB) is missing: run 'make core' (or pass J2KC_LIB=/path/libj2kcuda.a)"; exit 1; }
	@mkdir -p $(DEPS)/lib && ln -sf $(J2KC_LIB) $(DEPS)/lib/libj2kcuda.a
endef

# Reconfigure only when the configure line itself changes.
FF_FLAGS_FILE := $(FF_BUILD)/.j2kc-configure-flags
$(FF_FLAGS_FILE): FORCE
	@mkdir -p $(@D)
	@printf '%s\n' '$(subst ','\'',$(FF_SRC) $(FF_CONFIGURE_FLAGS))' > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
FORCE:

$(FF_SRC)/.j2kcuda-patched: $(FF_FETCH) $(WRAPPER_FILES)
	configure-patch/apply.sh $(FF_SRC)
	@touch $@

$(FF_BUILD)/ffbuild/config.mak: $(FF_SRC)/.j2kcuda-patched $(DEPS)/lib/pkgconfig/j2kcuda.pc \
                                 $(DEPS)/lib/pkgconfig/ffnvcodec.pc $(FF_FLAGS_FILE) | $(CORE_FOR_FFMPEG)
	$(LINK_J2KC)
	@echo "configuring FFmpeg ($$(cat $(FF_SRC)/VERSION 2>/dev/null || cat $(FF_SRC)/RELEASE)) in $(FF_BUILD)"
	cd $(FF_BUILD) && PKG_CONFIG_PATH=$(DEPS)/lib/pkgconfig$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH} \
	  $(FF_SRC)/configure $(FF_CONFIGURE_FLAGS) > configure.log 2>&1 || \
	  { tail -n 30 configure.log; echo "FFmpeg configure failed: see $(FF_BUILD)/ffbuild/config.log"; exit 1; }
	@grep -q '^#define CONFIG_LIBJ2KCUDA_ENCODER 1' $(FF_BUILD)/config_components.h || \
	  { echo "FFmpeg configure left libj2kcuda out: see $(FF_BUILD)/ffbuild/config.log"; exit 1; }

ffmpeg-configure: $(FF_BUILD)/ffbuild/config.mak

# FFmpeg's own programs in $(FF_BUILD) look for their libraries in ../lib, as
# installed ones do: $(B)/lib holds links to the libraries of the build tree,
# so that they (and FATE, which runs them) work in place.
# FFmpeg's make does not track external archives: libavcodec is relinked when
# the core changed. The staged install in $(STAGE) is what FFMPEG, FFPROBE and
# FFPLAY point at: the tree `make install` gives.
ffmpeg: $(CORE_FOR_FFMPEG) $(FF_BUILD)/ffbuild/config.mak
	$(LINK_J2KC)
	@if [ $(J2KC_LIB) -nt $(FF_BUILD)/libavcodec/libavcodec.so ] || [ "$$(cat $(FF_BUILD)/.j2kc-lib 2>/dev/null)" != "$(J2KC_LIB)" ]; then \
	  rm -f $(FF_BUILD)/libavcodec/libavcodec.so*; echo "$(J2KC_LIB)" > $(FF_BUILD)/.j2kc-lib; fi
	configure-patch/apply.sh $(FF_SRC) >/dev/null
	$(SUBMAKE) -C $(FF_BUILD) -j$(JOBS)
	@mkdir -p $(B)/lib && for l in $(FF_BUILD)/lib*/lib*.so.[0-9]*; do \
	  case $$l in *.so.*.*) ;; *) ln -sfn ../ffmpeg/$${l#$(FF_BUILD)/} $(B)/lib/; esac; done
	@for f in $(FF_BUILD)/ffmpeg $(B)/lib/lib*.so.*; do \
	  readelf -d $$f | grep -q 'Library rpath: \[\$$ORIGIN/\.\./lib\]' || \
	    { echo "error: $$f has no rpath \$$ORIGIN/../lib: $$(readelf -d $$f | grep -i rpath)"; exit 1; }; done
	@$(FF_BUILD)/ffmpeg -hide_banner -version >/dev/null || { echo "error: $(FF_BUILD)/ffmpeg does not start"; exit 1; }
	$(call INSTALL_TREE,$(STAGE),)
	@ldd $(FFMPEG) | grep -q 'libcuda\.' && { echo "error: $(FFMPEG) links libcuda"; exit 1; } || true
	@echo "built $(FFMPEG), $(FFPROBE) and $(FFPLAY) (staged install in $(STAGE))"

# ---------------------------------------------------------------------------
# Demo and tests.
demo: all
	FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) OUT=$(B)/demo scripts/demo.sh

FATE_ARGS = SAMPLES= -k -j$(JOBS)

test-fate: all
	$(SUBMAKE) -C $(FF_BUILD) $(FATE_ARGS) fate-j2k_cuda

test-ffmpeg: all
	FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) OUT=$(B)/test-ffmpeg scripts/ffmpeg-checks.sh

# ffplay showing a libj2kcuda MXF headless (SDL's dummy driver), against ffmpeg's decode.
test-player: all
	FFMPEG=$(FFMPEG) FFPLAY=$(FFPLAY) OUT=$(B)/test-player scripts/player-test.sh

# `make install` into a temporary prefix; a program built from it with pkg-config alone.
test-install: all
	BUILD=$(B) OUT=$(B)/test-install scripts/install-test.sh

# Every test, with one closing summary line.
test: all
	BUILD=$(B) CORE_DIR=$(abspath $(CORE_DIR)) FF_BUILD=$(FF_BUILD) FFMPEG=$(FFMPEG) FFPROBE=$(FFPROBE) \
	  FFPLAY=$(FFPLAY) JOBS=$(JOBS) scripts/run-tests.sh all

# Robustness. The GoogleTest suite built with ASan+UBSan (leak
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
	  FFPLAY=$(FFPLAY) JOBS=$(JOBS) scripts/run-tests.sh gpu

# A self-contained FATE runner (ffmpeg, ffprobe, references, data) for a
# machine without the FFmpeg build tree: $(BUILD)/fate-bundle/run.sh [cpu|cuda].
fate-bundle: all
	FF_SRC=$(FF_SRC) FF_BUILD=$(FF_BUILD) STAGE=$(STAGE) scripts/fate-bundle.sh $(B)/fate-bundle

# ---------------------------------------------------------------------------
# Benchmark against the peers (bench/). bench-prep fills BENCH_DIR
# here (it needs the network: Debian packages, PyPI wheels); bench runs on the
# CUDA machine from BENCH_DIR alone and writes BENCH_OUT; bench-readme puts
# BENCH_OUT/results.md's summary into README's Performance section.
# BENCH_ARGS: run.py's options, e.g. --budget SECONDS (default 500), --cases
# and --add-to EARLIER/results.json (a run in parts, on the same machine), or a
# dry run of every command off the GPU machine: BENCH_ARGS='--cpu --small 4 --quick'.
BENCH_DIR ?= $(BUILD)/bench
BENCH_OUT ?= $(BUILD)/bench-out
BENCH_ARGS ?=

# BENCH_NO_BUILD=1 takes J2KC_LIB and FFMPEG as they are (no `make all` first).
bench-prep: $(if $(BENCH_NO_BUILD),,all)
	BENCH_DIR=$(BENCH_DIR) BENCH_CACHE=$(B)/bench-cache CORE_LIB=$(J2KC_LIB) FFMPEG=$(FFMPEG) \
	  NVCC=$(NVCC) CUDA_LIBDIR=$(CUDA_LIBDIR) bench/prep.sh

# Only bin/j2kc_bench and bin/ffmpeg of a filled BENCH_DIR, from this tree (no network).
.PHONY: bench-bins
bench-bins: $(if $(BENCH_NO_BUILD),,all)
	BENCH_ONLY_BINS=1 BENCH_DIR=$(BENCH_DIR) CORE_LIB=$(J2KC_LIB) FFMPEG=$(FFMPEG) \
	  NVCC=$(NVCC) CUDA_LIBDIR=$(CUDA_LIBDIR) bench/prep.sh

bench:
	@test -x $(BENCH_DIR)/bin/j2kc_bench || { echo "$(BENCH_DIR) is empty: run 'make bench-prep' first"; exit 1; }
	PYTHONUNBUFFERED=1 python3 bench/run.py --dir $(BENCH_DIR) --out $(BENCH_OUT) $(BENCH_ARGS)

# BENCH_CHARTS=docs/bench also copies the charts and results.md there and shows them in README.
bench-readme:
	BENCH_CHARTS=$(BENCH_CHARTS) python3 bench/readme.py $(BENCH_OUT)/results.json README.md

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
# An install tree: ffmpeg, ffprobe, ffplay, j2kc; the shared and static
# libav* (libj2kcuda inside libavcodec), libj2kcuda.a; FFmpeg's headers and
# j2kc.h; libav*.pc and j2kcuda.pc. $(1): prefix, $(2): DESTDIR.
# The core's part comes from CMake's install rules, FFmpeg's from its own
# `make install` (configured for /usr/local; prefix is overridden, which
# rebuilds nothing). FFmpeg's .pc files are then given the prefix (their
# libdir and includedir are FFmpeg's defaults below it), the archive's new
# home in place of $(DEPS)/lib, and -Wl,-rpath,$${libdir} (the
# form of FFmpeg's --enable-rpath), so that a program built from them runs
# without LD_LIBRARY_PATH.
define INSTALL_TREE
	@if [ -f $(CORE_DIR)/cmake_install.cmake ]; then DESTDIR=$(2) cmake --install $(CORE_DIR) --prefix $(1) > /dev/null; \
	 else echo "$(CORE_DIR) is not configured: j2kc, libj2kcuda.a, j2kc.h and j2kcuda.pc left out of $(2)$(1)"; fi
	$(SUBMAKE) -C $(FF_BUILD) install prefix=$(1) DESTDIR=$(2) > /dev/null
	@for pc in $(2)$(1)/lib/pkgconfig/libav*.pc $(2)$(1)/lib/pkgconfig/libsw*.pc; do \
	  sed -i -e 's|^prefix=.*|prefix=$(1)|' -e 's|^libdir=.*|libdir=$${prefix}/lib|' \
	         -e 's|^includedir=.*|includedir=$${prefix}/include|' -e 's|-L$(DEPS)/lib|-L$${libdir}|g' \
	         -e '/^Libs:/{/-rpath/!s|-L\$${libdir}|-L$${libdir} -Wl,-rpath,$${libdir}|}' $$pc; done
endef

install: all
	$(call INSTALL_TREE,$(PREFIX),$(DESTDIR))
	@echo "installed into $(DESTDIR)$(PREFIX)"

help:
	@echo "j2k_cuda targets:"
	@echo "  make               libj2kcuda and the j2kc tool ($(CORE_DIR)), then FFmpeg with libj2kcuda ($(FF_BUILD)):"
	@echo "                     the full FFmpeg (every native codec, format, filter; x86 assembly; libopenjpeg,"
	@echo "                     zimg, lcms2, libxml2, freetype/harfbuzz/fribidi/fontconfig, soxr, SDL2; CUDA/NVDEC/"
	@echo "                     NVENC), shared and static, ffmpeg/ffprobe/ffplay, staged as an install in $(STAGE)"
	@echo "  make demo          encode a generated 4096x2160 XYZ clip to DCI 4K MXF with libj2kcuda, decode it"
	@echo "                     back, print fps, bytes/frame against the DCI cap and PSNR (GPU if present, else CPU)"
	@echo "  make test          every test: core ctest, FATE fate-j2k_cuda (backend=cpu), ffmpeg interop checks,"
	@echo "                     ffplay headless, a program built against 'make install'"
	@echo "  make test-gpu      on a CUDA machine: Gpu* core tests and FATE with backend=cuda (same references)"
	@echo "  make core          only the core: $(CORE_DIR)/cuda/libj2kcuda.a, $(J2KC_TOOL) and the tests"
	@echo "  make test-core     core ctest;  make test-gpu-core: its Gpu* half"
	@echo "  make ffmpeg        fetch (Debian source packages), patch, configure, build and stage FFmpeg"
	@echo "  make test-fate     FATE: make -C $(FF_BUILD) fate-j2k_cuda  (fate-gpu: fate-j2k_cuda-gpu)"
	@echo "  make test-ffmpeg   ffmpeg/ffprobe/opj_* interop checks, hostile input to the wrapper"
	@echo "  make test-player   ffplay plays a libj2kcuda MXF with SDL's dummy driver; the frame shown against ffmpeg's"
	@echo "  make test-install  make install into a temporary prefix, build and run a decoder program from it"
	@echo "  make test-sanitize the GoogleTest suite under ASan+UBSan+LeakSanitizer, CPU tests ($(BUILD)/sanitize;"
	@echo "                     SAN_MODE=quick|full, default quick)"
	@echo "  make test-fuzz     libFuzzer targets fuzz_decoder, fuzz_jp2 (clang), FUZZ_SECONDS each (default 60;"
	@echo "                     a release run: FUZZ_SECONDS=3600); crashes land in $(BUILD)/fuzz/artifacts"
	@echo "  make fate-gen      regenerate fate/ref/ from a real run (CPU backend)"
	@echo "  make fate-bundle   $(BUILD)/fate-bundle/run.sh: FATE without the FFmpeg build tree or Debian's libraries"
	@echo "                     (for the GPU machine; ffmpeg, ffprobe and every library but glibc's in the folder)"
	@echo "  make bench-prep    fill BENCH_DIR=$(BENCH_DIR) for the benchmark: j2kc_bench, ffmpeg and its libraries,"
	@echo "                     Debian's opj/grk tools, nvJPEG2000 wheels, photographs (needs the network)"
	@echo "  make bench         on a CUDA machine: j2k_cuda against nvJPEG2000, OpenJPEG, Grok and FFmpeg on the"
	@echo "                     same frames; table, results.json and PNG charts in BENCH_OUT=$(BENCH_OUT) (< 10 min)"
	@echo "  make bench-bins    refresh BENCH_DIR's j2kc_bench and ffmpeg (with its libraries) from this tree"
	@echo "  make bench-readme  README's Performance section from BENCH_OUT/results.json"
	@echo "  make check-archs   compile every .cu file for the oldest CUDA_ARCHS entry ($(CHECK_ARCH)); CI runs it"
	@echo "  make install       into PREFIX: bin/ ffmpeg ffprobe ffplay j2kc; lib/ libav*.so and .a (libj2kcuda in"
	@echo "                     libavcodec), libj2kcuda.a, pkgconfig/ libav*.pc j2kcuda.pc; include/ FFmpeg's, j2kc.h."
	@echo "                     Relocatable: programs and libraries find ../lib themselves (DESTDIR honoured)"
	@echo "  make clean         remove $(BUILD)/ (distclean: the same)"
	@echo "outputs: $(FFMPEG) $(FFPROBE) $(FFPLAY) (FFMPEG, FFPROBE, FFPLAY of the tests)"
	@echo "         $(J2KC_TOOL) $(CORE_DIR)/cuda/libj2kcuda.a; FFmpeg's build tree $(FF_BUILD)"
	@echo "variables:"
	@echo "  BUILD=$(BUILD) JOBS=$(JOBS) PREFIX=$(PREFIX) DESTDIR="
	@echo "  CUDA_ARCHS='$(CUDA_ARCHS)' (CI: 90-real)"
	@echo "  FFMPEG_DEB_VERSION=$(FFMPEG_DEB_VERSION) NVCODEC_DEB_VERSION=$(NVCODEC_DEB_VERSION)"
	@echo "  FFMPEG_SRC=/path (your own FFmpeg 7.1/8.x/9.0 tree, patched in place)"
	@echo "  FF_EXTRA_CONFIGURE=... (appended to FFmpeg's configure line, e.g. --enable-libdav1d)"
	@echo "  J2KC_LIB=$(J2KC_LIB)"

clean:
	rm -rf $(BUILD)

distclean: clean
