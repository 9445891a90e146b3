# kvfuse: `make demo` and `make test` do everything on a fresh machine (setup, build, run).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DKVF_WERROR=ON
endif

KVFUSE_HOME ?= $(HOME)/.cache/kvfuse
REF_PYTHON := $(KVFUSE_HOME)/venv-ref/bin/python

# Models `make setup` fetches (scripts/setup.sh: smollm2 minilm qwen0.5b qwen1.5b, or all); default: smollm2
# qwen0.5b minilm.
MODELS ?=
# The models the `model` tests read (tests that need qwen1.5b run only where it is installed); qwen0.5b-hf is
# qwen0.5b written as a Hugging Face folder.
TEST_MODELS := smollm2 minilm qwen0.5b qwen0.5b-hf paper-vocabs

.PHONY: all setup setup-test setup-demo build test test-unit test-sanitize fuzz demo bench reference data clean

all: build

setup:
	@scripts/setup.sh $(MODELS)

# The models above, then the test venv ($KVFUSE_HOME/venv-test: the pinned OpenAI client Serve.OpenAiClients uses).
setup-test:
	@scripts/setup.sh $(TEST_MODELS)
	@scripts/setup-test-venv.sh

# minja's headers (chat templates), which CMake's configure needs: installed by scripts/setup.sh, never committed.
MINJA_HEADER := $(KVFUSE_HOME)/third_party/minja/minja.hpp
$(MINJA_HEADER):
	@scripts/setup.sh $(MODELS)

$(BUILD_DIR)/CMakeCache.txt: | $(MINJA_HEADER)
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Unit tests (tiny random models) and model tests (real weights against committed llama.cpp fixtures).
test: setup-test build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

test-unit: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L unit -j $(JOBS)

# ASan + UBSan build (clang, its own folder) of the unit tests and the libFuzzer targets (tests/fuzz/): the unit
# tests, then each fuzz target for FUZZ_SMOKE_SECONDS from its seeds.
SANITIZE_DIR ?= build-sanitize
FUZZ_SMOKE_SECONDS ?= 10
SANITIZE_TARGETS := kvf_unit_tests kvprep kvrun kvf_fuzz_targets
$(SANITIZE_DIR)/CMakeCache.txt: | $(MINJA_HEADER)
	cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DKVF_SANITIZE=ON \
	  -DKVF_CUDA=OFF

test-sanitize: setup-test $(SANITIZE_DIR)/CMakeCache.txt
	cmake $(SANITIZE_DIR) -DKVF_FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target $(SANITIZE_TARGETS)
	ctest --test-dir $(SANITIZE_DIR) --output-on-failure -L 'unit|fuzz' -j $(JOBS)

# Each fuzz target alone, one after the other, for FUZZ_SECONDS or FUZZ_RUNS executions (0: no limit), one
# summary line each (docs/results/fuzz.md).
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 0
fuzz: setup-test $(SANITIZE_DIR)/CMakeCache.txt
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target kvf_fuzz_targets
	for t in $$(ls tests/fuzz/seeds); do \
	  tests/fuzz/run_fuzz.sh $(SANITIZE_DIR)/bin/kvf_fuzz_$$t tests/fuzz/seeds/$$t $(SANITIZE_DIR)/fuzz/$$t \
	    -max_total_time=$(FUZZ_SECONDS) -runs=$$(( $(FUZZ_RUNS) > 0 ? $(FUZZ_RUNS) : -1 )) || exit 1; \
	done

# Builds the demo store and answers the demo questions with every method, answers and TTFT side by side, on
# DEMO_MODEL (a preset: qwen0.5b answers the demo questions; smollm2 is faster and mostly wrong).
DEMO_MODEL ?= qwen0.5b
setup-demo:
	@scripts/setup.sh $(DEMO_MODEL) minilm

# Builds only the two tools the demo runs, not the tests and benchmarks.
demo: setup-demo $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kvprep kvrun
	BUILD_DIR=$(BUILD_DIR) MODEL=$(DEMO_MODEL) scripts/demo.sh

# Prefill and decode speed against llama.cpp on the same GGUF, side by side (needs the reference venv).
bench: setup build
	@scripts/setup-reference.sh
	$(REF_PYTHON) bench/cpu_vs_llamacpp.py

# Regenerates the golden fixtures under tests/fixtures from llama.cpp (see tests/reference/README.md).
REFERENCE_PRESETS := smollm2 qwen0.5b qwen1.5b
reference:
	@scripts/setup.sh all
	@scripts/setup-reference.sh
	$(REF_PYTHON) tests/reference/make_quant_fixtures.py
	$(REF_PYTHON) tests/reference/make_embedder_fixtures.py
	for m in $(REFERENCE_PRESETS); do \
	  $(REF_PYTHON) tests/reference/make_token_fixtures.py --preset $$m && \
	  $(REF_PYTHON) tests/reference/make_llama_fixtures.py --preset $$m || exit 1; \
	done

# The benchmark data sets (data/datasets.json) into $KVFUSE_DATA, else $KVFUSE_HOME/data, each checked against its
# sha256. DATA_FROM is a local copy to copy them from: ../shared/data where that folder exists; empty (builders from
# the public sources only) elsewhere. `make data DATA_FROM=DIR` names another copy.
DATA_FROM ?= $(wildcard ../shared/data)
data:
	scripts/get_data.py $(if $(DATA_FROM),--from $(DATA_FROM))

clean:
	rm -rf $(BUILD_DIR)
