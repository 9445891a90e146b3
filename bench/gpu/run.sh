#!/usr/bin/env bash
# On the GPU machine, in one call: unpack the bundle scripts/device-bundle.sh made here, write random-weight models
# of real shapes (the weights never travel), run the CUDA tests and the benchmarks, and leave every log and result
# in one folder: $OUT, which the device tool brings back (at most 8 files: summary.txt, run.log with every step's
# output, cuda_tests.xml, prefill.jsonl, attention.jsonl, ttft.md); ./gpu-out elsewhere.
#
# Usage (from the repository root, the bundle carried):  bench/gpu/run.sh [BUNDLE.tar.xz]
# env:
#   STEPS           which parts, in order (default tests,attention,probe,models,prefill,precompute,ttft,kvrun,
#                   host_cpu)
#   BACKEND         cuda (default); cpu runs the same script on this machine's CPU to check it end to end
#   BIG_SHAPE       the large model's shape (qwen2.5-7b); BIG_LAYERS cuts its layers (0: all)
#   PREFILL_TOKENS  prompt lengths of the prefill benchmark (512 2048 8192)
#   CHUNKS          chunks of ~512 tokens in the precompute benchmark's corpus (100)
#   ATTN_CONTEXT    keys of the attention benchmark (32768), Qwen2.5-7B's heads
#   TTFT_CHUNKS     ~512-token chunks in the TTFT benchmark's context (57: about 27K tokens); TTFT_RUNS (3)
#   COMPUTE         fast (default: bf16 where the backend has it) or f32, for prefill, precompute and TTFT
#   PROBE_SPLITS    key split counts the probe step measures side by side (auto 10; see the step)
#   FLASH_FORMS     forms of the tensor-core attention the tests, the attention op, prefill and cached TTFT run
#                   with: auto (default: the kernel picks per call), or query rows per warp forced through
#                   KVF_FLASH_WARP_ROWS, e.g. "auto 32 16" to measure them side by side
#   STEP_TIMEOUT    seconds after which a step is stopped (300), so one slow step cannot cost the whole call
#   PROFILE_TOKENS  prompt lengths of the large shape's op profiles (2048 8192)
#   NEIGHBOR_CACHE_MB  similarity precompute: neighbours' KV kept in (device) memory (16384)
#   STORE_DIR       where the precompute store is written (/tmp/kvfuse-device/store; /dev/shm/... takes the disk out)
#   BATCH_TOKENS    chunk tokens per forward pass of the similarity precompute (1024); MORE_BATCH_TOKENS (unset:
#                   none) adds a second similarity run with that many, on a copy of the store made before the first
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:-$here/device-bundle/kvfuse-sm90.tar.xz}
out=${OUT:-$here/gpu-out}
steps=${STEPS:-tests,attention,probe,models,prefill,precompute,ttft,kvrun,host_cpu}
backend=${BACKEND:-cuda}
big_shape=${BIG_SHAPE:-qwen2.5-7b}
big_layers=${BIG_LAYERS:-0}
prefill_tokens=${PREFILL_TOKENS:-512 2048 8192}
chunks=${CHUNKS:-100}
attn_context=${ATTN_CONTEXT:-32768}
ttft_chunks=${TTFT_CHUNKS:-57}
ttft_runs=${TTFT_RUNS:-3}
compute=${COMPUTE:-fast}
step_timeout=${STEP_TIMEOUT:-300}
flash_forms=${FLASH_FORMS:-auto}
store=${STORE_DIR:-/tmp/kvfuse-device/store}
mkdir -p "$out"
summary=$out/summary.txt log=$out/run.log
: >"$summary"
: >"$log"
say() { echo "$*" | tee -a "$summary"; }
want() { [[ ",$steps," == *",$1,"* ]]; }
# Selects a form of the tensor-core attention; $form_tag names it in step names when several are measured.
use_form() {
  if [ "$1" = auto ]; then unset KVF_FLASH_WARP_ROWS; else export KVF_FLASH_WARP_ROWS=$1; fi
  form_tag=""
  [ "$(wc -w <<<"$flash_forms")" -gt 1 ] && form_tag=" [rows $1]"
  return 0
}
work=/tmp/kvfuse-device
# Runs one step, its output appended to run.log under a header and left in $work/last.log; records its status and
# time in the summary and never stops the rest.
step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*" >>"$log"
  timeout "$step_timeout" "$@" >"$work/last.log" 2>&1
  local rc=$?
  cat "$work/last.log" >>"$log"
  say "$(printf '%-34s rc=%-3s %5ss' "$name" "$rc" $((SECONDS - t0)))"
  return $rc
}

use_form "${flash_forms%% *}"
[ -f "$bundle" ] || { echo "error: $bundle not found: run scripts/device-bundle.sh here and carry device-bundle/" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work/models"
tar -xJf "$bundle" -C "$work" || { echo "error: $bundle: cannot unpack" >&2; exit 1; }

# The CUDA 13 libraries the binaries leave to the machine: the toolkit's, else the PyTorch wheels' copies.
cuda_dirs=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \
  -maxdepth 8 \( -name 'libcublas.so.13' -o -name 'libcudart.so.13' -o -name 'libcublasLt.so.13' \) \
  -printf '%h\n' 2>/dev/null | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=$work/lib:${cuda_dirs}${LD_LIBRARY_PATH:-}
bin=$work/bin
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(cat "$work/COMMIT") (bundle built for $(cat "$work/BUILD")); backend: $backend"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 || true
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo "cuda libraries from: ${cuda_dirs:-none found}"
} 2>&1 | tee -a "$summary"
missing=$(ldd "$bin"/* | grep "not found" | sort -u)
[ -z "$missing" ] || { say "unresolved libraries:"; say "$missing"; exit 1; }

if want tests; then
  for form in $flash_forms; do
    use_form "$form"
    step "cuda_tests$form_tag" "$bin/kvf_unit_tests" --gtest_filter='CudaVsCpu*:CudaBackend*:*FusedPrefillTest*' \
      --gtest_output="xml:$out/cuda_tests.xml"
    # The counts, and every failed test by name (skipped ones are listed in run.log).
    grep -E "^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \] [0-9]+ test" "$work/last.log" | sort -u | tee -a "$summary"
  done
  # Which instructions the kernels use: HMMA (tensor cores), LDSM (matrix loads), LDL/STL (local-memory spills).
  if command -v cuobjdump >/dev/null; then
    say "sass: $(cuobjdump -sass "$bin/kvf_unit_tests" 2>/dev/null | grep -oE '\b(HMMA|LDSM|LDL|STL)[.A-Z0-9]*' |
      sort | uniq -c | tr -s ' \n' ' ')"
  fi
fi

# The sparse prefill's attention op by recompute ratio, against PyTorch SDPA (flash, dense causal) on the GPU.
if want attention; then
  for form in $flash_forms; do
    use_form "$form"
    step "attention$form_tag" "$bin/kvf_attention_bench" --backend "$backend" --context "$attn_context" --heads 28 \
      --kv-heads 4 --head-dim 128 --ratios 0.05,0.15,0.3,1 --bf16 --json &&
      python3 -c 'import json,sys; [print(json.dumps(dict(json.loads(l), warp_rows=sys.argv[1]))) for l in sys.stdin]' \
        "$form" <"$work/last.log" | tee -a "$out/attention.jsonl" |
      python3 -c 'import json,sys; print(" ".join("%.2f:%.2fms" % (r["ratio"], r["median_ms"]) for r in map(json.loads, sys.stdin)))' |
      tee -a "$summary"
  done
  if [ "$backend" = cuda ]; then
    step sdpa python3 "$here/bench/gpu/sdpa_bench.py" --context "$attn_context" &&
      cat "$work/last.log" >>"$out/attention.jsonl"
  fi
fi

# The probe layer of fusion's selection pass at the TTFT benchmark's size: 37 question rows over 26,981 keys, timed
# without and with the column sums of their softmax weights, once per key split count in PROBE_SPLITS (auto: the
# kernel's choice; a number is forced through KVF_FLASH_SPLITS; 10 is what the rule before key_splits.h chose).
if want probe; then
  for splits in ${PROBE_SPLITS:-auto 10}; do
    if [ "$splits" = auto ]; then unset KVF_FLASH_SPLITS; else export KVF_FLASH_SPLITS=$splits; fi
    step "probe [splits $splits]" "$bin/kvf_attention_bench" --backend "$backend" --context 26981 --heads 28 \
      --kv-heads 4 --head-dim 128 --ratios 0.00137136 --probe-rows 37 --bf16 --runs 20 --json &&
      python3 -c 'import json,sys; [print(json.dumps(dict(json.loads(l), splits=sys.argv[1]))) for l in sys.stdin]' \
        "$splits" <"$work/last.log" | tee -a "$out/attention.jsonl" | tee -a "$summary"
  done
  unset KVF_FLASH_SPLITS
fi

small=$work/models/smollm2-135m.gguf big=$work/models/$big_shape.gguf
if want models; then
  step model_smollm2 "$bin/kvf_random_model" --shape smollm2-135m --out "$small"  # no tokenizer: its own vocabulary
  step "model_$big_shape" "$bin/kvf_random_model" --shape "$big_shape" --layers "$big_layers" \
    --tokenizer-from "$work/qwen-tokenizer.gguf" --out "$big"
fi

if want prefill; then
  for form in $flash_forms; do
    use_form "$form"
    for m in "$small" "$big"; do
      [ -f "$m" ] || continue
      for n in $prefill_tokens; do
        step "prefill $(basename "$m" .gguf) $n$form_tag" "$bin/kvf_prefill_bench" --backend "$backend" --model "$m" \
          --tokens "$n" --runs 3 --threads "$(nproc)" --compute "$compute" --json &&
          tail -1 "$work/last.log" >>"$out/prefill.jsonl"
      done
    done
  done
  use_form "${flash_forms%% *}"
  # Where the large shape's prefill spends its time, op by op (each op waited for).
  for n in ${PROFILE_TOKENS:-2048 8192}; do
    [ -f "$big" ] && step "profile $(basename "$big" .gguf) $n" "$bin/kvf_prefill_bench" --backend "$backend" \
      --model "$big" --tokens "$n" --runs 2 --threads "$(nproc)" --compute "$compute" --profile
  done
  # The peer: Hugging Face transformers (SDPA, bf16) on the large shape, same prompt lengths.
  if [ "$backend" = cuda ]; then
    step "hf prefill $big_shape" python3 "$here/bench/gpu/hf_prefill_bench.py" --shape "$big_shape" \
      --layers "$big_layers" --tokens $prefill_tokens --runs 3 && cat "$work/last.log" >>"$out/prefill.jsonl"
  fi
fi

# FusionRAG's offline stage on the large shape: each ~512-token chunk's KV after its 10 nearest neighbours'
# (synthetic text and embeddings: the embedder's weights do not travel either).
if want precompute && [ -f "$big" ]; then
  rm -rf "$store"
  mkdir -p "$(dirname "$store")"
  # The disk the store is written to, alone: 1 GiB of direct writes (none for a store in memory).
  if [[ $store != /dev/shm/* ]]; then
    step "disk write $(dirname "$store")" dd if=/dev/zero of="$(dirname "$store")/dd.bin" bs=16M count=64 oflag=direct
    tail -1 "$work/last.log" | tee -a "$summary"
    rm -f "$(dirname "$store")/dd.bin"
  fi
  step corpus python3 "$here/bench/synthetic_corpus.py" "$work/corpus.jsonl" "$chunks" 420
  step chunk "$bin/kvprep" chunk --corpus "$work/corpus.jsonl" --store "$store" --chunk-tokens 512 --model "$big"
  step embed_synthetic "$bin/kvf_scale_tool" embed-synthetic --store "$store"
  step index "$bin/kvprep" index --store "$store"
  step neighbors "$bin/kvprep" neighbors --store "$store" --top-n 10
  step "prefill independent" "$bin/kvprep" prefill --store "$store" --model "$big" --mode independent \
    --backend "$backend" --compute "$compute"
  tail -2 "$work/last.log" | tee -a "$summary"
  more_batch=${MORE_BATCH_TOKENS:-}
  [ -n "$more_batch" ] && cp -a "$store" "$store-batch$more_batch"
  step "prefill similarity" "$bin/kvprep" prefill --store "$store" --model "$big" --mode similarity --top-n 10 \
    --backend "$backend" --compute "$compute" --neighbor-cache-mb "${NEIGHBOR_CACHE_MB:-16384}" \
    --batch-tokens "${BATCH_TOKENS:-1024}"
  tail -2 "$work/last.log" | tee -a "$summary"
  if [ -n "$more_batch" ]; then
    step "prefill similarity, batch $more_batch" "$bin/kvprep" prefill --store "$store-batch$more_batch" \
      --model "$big" --mode similarity --top-n 10 --backend "$backend" --compute "$compute" \
      --neighbor-cache-mb "${NEIGHBOR_CACHE_MB:-16384}" --batch-tokens "$more_batch"
    tail -2 "$work/last.log" | tee -a "$summary"
    rm -rf "$store-batch$more_batch"
  fi
fi

# TTFT of full, reuse and fusion at 15% over TTFT_CHUNKS chunks of the precompute store (one question whose
# passages are the corpus's first documents), the large shape.
if want ttft && [ -d "$store" ]; then
  python3 - "$work/corpus.jsonl" "$ttft_chunks" "$work/questions.jsonl" <<'PY'
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1])][: int(sys.argv[2]) + 6]
q = {"id": "q0", "question": "Which station is next to the old mill by the river?",
     "contexts": [{"title": d["title"], "text": d["text"]} for d in docs]}
open(sys.argv[3], "w").write(json.dumps(q) + "\n")
PY
  step ttft "$bin/kvf_ttft_bench" --store "$store" --model "$big" --queries "$work/questions.jsonl" \
    --questions 1 --chunks "$ttft_chunks" --runs "$ttft_runs" --threads "$(nproc)" --compute "$compute" \
    --backend "$backend" --methods full reuse fusion --ratios 0.15 && cp "$work/last.log" "$out/ttft.md"
  cat "$work/last.log" >>"$summary"
  # The same with the chunks' KV held in the engine's cache (device memory on the GPU): serving hot chunks.
  for form in $flash_forms; do
    use_form "$form"
    step "ttft cached$form_tag" "$bin/kvf_ttft_bench" --store "$store" --model "$big" \
      --queries "$work/questions.jsonl" --questions 1 --chunks "$ttft_chunks" --runs "$ttft_runs" \
      --threads "$(nproc)" --compute "$compute" --backend "$backend" --methods full reuse fusion --ratios 0.15 \
      --cache-mb 16384 && cat "$work/last.log" >>"$out/ttft.md"
    cat "$work/last.log" >>"$summary"
  done
  use_form "${flash_forms%% *}"
  # Again with thin products' GEMM algorithms chosen by timing cuBLASLt's candidates (KVF_GEMM_TUNE=1, off by
  # default): the selection pass's 37-row products read every weight once and should run at memory bandwidth.
  # The choices, each beside the heuristic's, are in run.log.
  step "ttft cached, gemm tuned" env KVF_GEMM_TUNE=1 "$bin/kvf_ttft_bench" --store "$store" --model "$big" \
    --queries "$work/questions.jsonl" --questions 1 --chunks "$ttft_chunks" --runs "$ttft_runs" \
    --threads "$(nproc)" --compute "$compute" --backend "$backend" --methods full reuse fusion --ratios 0.15 \
    --cache-mb 16384 && { echo "KVF_GEMM_TUNE=1:"; grep -v "^cuda: gemm" "$work/last.log"; } >>"$out/ttft.md"
  grep -v "^cuda: gemm" "$work/last.log" >>"$summary"
  # Where each method's time goes, op by op: each op waited for (its device time), then each call's host time
  # beside each stage's wall time (whether launching ops bounds the stage: fusion's fixed part). One timed run each.
  for how in --profile --profile-host; do
    step "ttft ${how#--}" "$bin/kvf_ttft_bench" --store "$store" --model "$big" \
      --queries "$work/questions.jsonl" --questions 1 --chunks "$ttft_chunks" --runs 1 --threads "$(nproc)" \
      --compute "$compute" --backend "$backend" --methods full reuse fusion --ratios 0.15 --cache-mb 16384 "$how" &&
      cat "$work/last.log" >>"$out/ttft.md"
    cat "$work/last.log" >>"$summary"
  done
fi

# kvrun end to end on the large shape: batch (fusion) and a small eval sweep (every method, both stored KV modes).
# The weights are random, so the answers are noise: this checks that each path runs and how long it takes.
if want kvrun && [ -d "$store" ]; then
  python3 - "$work/corpus.jsonl" "$work/qa.jsonl" <<'PY'
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    for i in range(3):
        ctx = docs[4 * i: 4 * i + 4]
        f.write(json.dumps({"id": f"q{i}", "question": "Which river runs past the mill?", "answers": ["river"],
                            "contexts": [{"title": d["title"], "text": d["text"]} for d in ctx]}) + "\n")
PY
  step "kvrun batch" "$bin/kvrun" batch --queries "$work/qa.jsonl" --out "$work/batch.jsonl" --store "$store" \
    --model "$big" --backend "$backend" --compute "$compute" --method fusion --max-tokens 8 --json
  step "kvrun eval" "$bin/kvrun" eval --dataset "$work/qa.jsonl" --store "$store" --model "$big" \
    --backend "$backend" --methods full,reuse,cacheblend,a3,fusion --ratios 0.15 --kv independent,similarity \
    --max-tokens 8 --out "$work/eval"
  [ -f "$work/eval/report.md" ] && sed -n '1,40p' "$work/eval/report.md" >>"$log"
  # The next questions' chunk KV loading while one computes (FusionRAG §4.2; on a GPU through the backend's
  # loading lane): 6 questions of 16 chunks each, no chunk shared, answered without prefetch and 2 questions ahead.
  python3 - "$work/corpus.jsonl" "$work/overlap.jsonl" <<'PY'
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    per = 16 if len(docs) >= 32 else max(1, len(docs) // 2)  # a small dry run's corpus: two questions
    for i in range(min(6, len(docs) // per)):
        ctx = docs[per * i: per * i + per]
        f.write(json.dumps({"id": f"o{i}", "question": "Which river runs past the mill?",
                            "contexts": [{"title": d["title"], "text": d["text"]} for d in ctx]}) + "\n")
PY
  for ahead in 0 2; do
    step "kvrun batch, prefetch $ahead" "$bin/kvrun" batch --queries "$work/overlap.jsonl" \
      --out "$work/overlap-$ahead.jsonl" --store "$store" --model "$big" --backend "$backend" --compute "$compute" \
      --method fusion --max-tokens 8 --json --prefetch "$ahead" --cache-mb 16384 &&
      python3 - "$work/overlap-$ahead.jsonl" "$ahead" <<'PY' | tee -a "$summary"
import json, statistics, sys
ms = [json.loads(line)["timings_ms"] for line in open(sys.argv[1])]
total = sum(m["ttft"] + m["decode"] for m in ms)
later = ms[1:]  # the first question's chunks can only load when it asks
print(f"  prefetch {sys.argv[2]}: {len(ms)} questions in {total:.0f} ms (ttft + decode); after the first: median "
      f"load waited {statistics.median(m['load'] for m in later):.1f} ms, ttft "
      f"{statistics.median(m['ttft'] for m in later):.1f} ms, decode {statistics.median(m['decode'] for m in later):.1f} ms")
PY
  done
fi

# The host CPU's matmul kernels, AMX among them where the CPU has it (the GPU machine's host is a Xeon): their
# tests, and a prefill of the small shape with each bf16 kernel the CPU offers, one after the other.
if want host_cpu; then
  say "host cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE '\b(avx512_bf16|amx_tile|amx_bf16|amx_int8)\b' |
    tr '\n' ' ')"
  step "host cpu kernel tests" "$bin/kvf_unit_tests" --gtest_filter='AmxTiles*:PackedMatmul*'
  grep -E "^\[  PASSED  \]|^\[  FAILED  \]" "$work/last.log" | sort -u | tee -a "$summary"
  # The matrix peak of every kernel family the host has (AMX and AVX-512 loops never ran on the CPU machines).
  step "host cpu matrix peak" "$bin/kvf_matrix_peak" --threads "$(nproc)" && tail -8 "$work/last.log" | tee -a "$summary"
  for kernel in amx-bf16 avx512-bf16; do
    [ -f "$small" ] && step "host cpu prefill 512, $kernel" env KVF_GEMM_KERNEL="$kernel" "$bin/kvf_prefill_bench" \
      --backend cpu --model "$small" --tokens 512 --runs 3 --threads "$(nproc)" --json &&
      tail -1 "$work/last.log" | tee -a "$summary"
  done
fi

say "files: $(ls "$out" | tr '\n' ' ')"
