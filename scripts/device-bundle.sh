#!/usr/bin/env bash
# Builds kvfuse for the GPU machine (sm_90, the H100) and packs what it needs to run there into one archive:
# the stripped binaries and every shared library they load that is neither the C library nor the CUDA toolkit
# (that machine has CUDA 13 and PyTorch, none of this project's Debian libraries and no package registry).
# bench/gpu/run.sh unpacks it there and runs the CUDA tests and benchmarks.
#
# Usage: scripts/device-bundle.sh            -> device-bundle/kvfuse-sm90.tar.xz (device-bundle/ is ignored)
# It also holds Qwen2.5's tokenizer alone (qwen-tokenizer.gguf), for random models that kvprep can run on text.
# env: BUILD_DIR (build-device), JOBS (2), CUDA_ARCH (90)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build-device}
jobs=${JOBS:-2}
arch=${CUDA_ARCH:-90}
out_dir=$here/device-bundle
archive=$out_dir/kvfuse-sm$arch.tar.xz
targets=(kvf_unit_tests kvprep kvrun kvf_prefill_bench kvf_ttft_bench kvf_random_model kvf_scale_tool
  kvf_attention_bench kvf_matrix_peak)

command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "error: no nvcc here (the CUDA toolkit builds the device binaries)" >&2; exit 1; }
export PATH=$PATH:/usr/local/cuda/bin
"$here/scripts/setup.sh" qwen0.5b >/dev/null  # the Debian build dependencies, and the model whose tokenizer travels

echo "device-bundle: building ${targets[*]} for sm_$arch in $build"
# For any x86-64 CPU with AVX2 (not this machine's: the GPU machine's host is another CPU); the kernels that need
# more carry their own flags and are chosen at run time.
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DKVF_CUDA=ON -DKVF_MPI=OFF -DKVF_NATIVE=OFF \
  -DCMAKE_CXX_FLAGS="-march=x86-64-v3" \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for t in "${targets[@]}"; do
  cp "$build/bin/$t" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$t"
done

# Shared libraries: all that ldd resolves, less the C library (the machine's own is newer than this one's) and
# the CUDA toolkit's (the machine's CUDA 13 has them: the same major version as the build's).
system='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil)\.so'
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnvJitLink)\.so'
ldd "$stage"/bin/* | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  if [[ $name =~ $system || $name =~ $cuda ]]; then continue; fi
  cp -L "$path" "$stage/lib/$name"
done
strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true
missing=$(LD_LIBRARY_PATH=$stage/lib ldd "$stage"/bin/* | grep "not found" | grep -Ev "$cuda" || true)
[ -z "$missing" ] || { echo "error: unresolved libraries:"; echo "$missing"; exit 1; } >&2

# Qwen2.5's tokenizer alone (about 6 MB): the random models of Qwen shapes take it, so kvprep can chunk text.
"$stage/bin/kvf_random_model" --tokenizer-only-from "$(ls "${KVFUSE_HOME:-$HOME/.cache/kvfuse}"/models/qwen0.5b/*.gguf)" \
  --out "$stage/qwen-tokenizer.gguf" >/dev/null
git -C "$here" rev-parse HEAD >"$stage/COMMIT"
echo "sm_$arch $(nvcc --version | tail -1)" >"$stage/BUILD"
mkdir -p "$out_dir"
tar -C "$stage" -cf - . | xz -T"$jobs" -6 >"$archive.tmp"
mv "$archive.tmp" "$archive"
echo "device-bundle: $archive ($(du -h "$archive" | cut -f1); $(ls "$stage/lib" | wc -l) libraries: $(ls "$stage/lib" | tr '\n' ' '))"
echo "carry it: run(command='bench/gpu/run.sh', carry=['device-bundle'])"
