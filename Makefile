# j2k_cuda top-level build. `make help` lists the targets.
BUILD       ?= build
CUDA_ARCHS  ?= 75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual
JOBS        ?= $(shell nproc)
CMAKE_FLAGS ?=

CORE_DIR := $(BUILD)/core

.PHONY: all core test test-core test-gpu help clean

all: core

$(CORE_DIR)/build.ninja:
	cmake -S . -B $(CORE_DIR) -G Ninja -DCMAKE_CUDA_ARCHITECTURES="$(CUDA_ARCHS)" $(CMAKE_FLAGS)

core: $(CORE_DIR)/build.ninja
	ninja -C $(CORE_DIR) -j $(JOBS)

test-core: core
	cd $(CORE_DIR) && ctest --output-on-failure -j $(JOBS)

test: test-core

# The GPU half (Gpu* tests) on a CUDA machine; the rest skip without one.
test-gpu: core
	cd $(CORE_DIR) && GTEST_FILTER='Gpu*:*/Gpu*:*.Gpu*' ctest --output-on-failure

help:
	@echo "j2k_cuda targets:"
	@echo "  make            build libj2kcuda, j2kc and (later) ffmpeg with j2k_cuda"
	@echo "  make test       build and run every test (CPU; GPU tests skip without a GPU)"
	@echo "  make test-gpu   run the GPU tests (on a CUDA machine)"
	@echo "  make clean      remove $(BUILD)/"
	@echo "variables: BUILD=$(BUILD) CUDA_ARCHS='$(CUDA_ARCHS)' JOBS=$(JOBS)"

clean:
	rm -rf $(BUILD)
