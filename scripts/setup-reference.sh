#!/usr/bin/env bash
# Idempotent setup of the reference virtual environment ($KVFUSE_HOME/venv-ref): llama.cpp (through pinned
# llama-cpp-python, built from source for this CPU) and the Python packages the reference and benchmark scripts
# use. Needed by `make reference` and `make bench`; `make test` reads the committed fixtures and needs only the
# converter's packages (--convert: gguf, numpy, safetensors, tokenizers; scripts/setup.sh qwen0.5b-hf).
# A second run finds the packages importable at the pinned version and returns in seconds.
set -euo pipefail
KVFUSE_HOME=${KVFUSE_HOME:-$HOME/.cache/kvfuse}
venv="$KVFUSE_HOME/venv-ref"
llama_version=0.3.16
convert_packages=(  # tests/reference/gguf_to_hf.py
  "numpy==2.4.6"                      # logits arithmetic, dequantization
  "gguf==0.19.0"                      # reading the Q4_1 file, writing its dequantized F32 copy
  "tokenizers==0.23.3"                # tokenizer cross-checks
  "safetensors==0.8.0"                # the embedder reference reads the same weights; Hugging Face folders
)
packages=(
  "llama-cpp-python[server]==$llama_version"  # the decoder reference, the prefill peer and the server peer in bench/
  "${convert_packages[@]}"
  "jinja2==3.1.6"                     # rendering the model's own chat template
  "sentence-transformers==6.2.0"      # the embedder reference (pulls torch, CPU use only)
)

log() { echo "setup-reference: $*"; }

installed() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$llama_version" <<'PY' 2>/dev/null
import sys
import gguf, jinja2, numpy, safetensors, sentence_transformers, tokenizers  # noqa: F401
import llama_cpp
import llama_cpp.server.app  # noqa: F401  (the [server] extra: bench/serve_load.py's peer)
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)
PY
}

if [ "${1:-}" = --convert ]; then
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import gguf, numpy, safetensors, tokenizers" 2>/dev/null; then
    exit 0
  fi
  [ -x "$venv/bin/python" ] || { log "creating $venv"; python3 -m venv "$venv"; }
  log "installing ${convert_packages[*]}"
  "$venv/bin/python" -m pip install -q "${convert_packages[@]}"
  exit 0
fi

# --avx2-lib: llama.cpp's libraries from the same llama-cpp-python source built for AVX2 without AVX-512, into
# $KVFUSE_HOME/llama-avx2-lib. With LLAMA_CPP_LIB_PATH pointing there, bench/cpu_vs_llamacpp.py measures llama.cpp's
# AVX2 kernels on an AVX-512 CPU, against kvfuse's with KVF_GEMM_KERNEL=avx2-int16 (docs/results/
# cpu_vs_llamacpp_avx2.md): a stand-in for an AVX2-only CPU. Prints the folder.
if [ "${1:-}" = --avx2-lib ]; then
  out="$KVFUSE_HOME/llama-avx2-lib"
  if [ -f "$out/libllama.so" ] && [ -f "$out/.llama-cpp-python-$llama_version" ]; then echo "$out"; exit 0; fi
  [ -x "$venv/bin/python" ] || { log "creating $venv"; python3 -m venv "$venv"; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  log "building llama.cpp $llama_version for AVX2 without AVX-512 (a few minutes)"
  "$venv/bin/python" -m pip download -q --no-binary :all: --no-deps -d "$work" "llama-cpp-python==$llama_version"
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  cmake -S "$work/llama_cpp_python-$llama_version/vendor/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF >"$work/cmake.log" 2>&1 || { tail -20 "$work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" -j "$(nproc)" --target llama >"$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log" >&2; exit 1; }
  mkdir -p "$out"
  cp "$work"/build/bin/lib*.so "$out"/  # each finds the others beside it ($ORIGIN)
  touch "$out/.llama-cpp-python-$llama_version"
  echo "$out"
  exit 0
fi

if installed; then
  log "ok ($venv, llama-cpp-python $llama_version)"
  exit 0
fi
[ -x "$venv/bin/python" ] || { log "creating $venv"; python3 -m venv "$venv"; }
log "installing ${packages[*]} (llama-cpp-python builds from source: a few minutes)"
# GGML_NATIVE: llama.cpp compiled for this machine's vector units, as a user building it here would run it.
CMAKE_ARGS="-DGGML_NATIVE=ON" "$venv/bin/python" -m pip install -q --no-binary llama-cpp-python "${packages[@]}"
installed || { echo "setup-reference: error: packages still not importable from $venv" >&2; exit 1; }
log "ok ($venv, llama-cpp-python $llama_version)"
