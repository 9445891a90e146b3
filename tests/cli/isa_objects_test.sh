#!/usr/bin/env bash
# Files compiled for AVX-512 must not define code that portable files share. A shared inline function (std::vector's
# members, TBB, kvf::fail) is emitted as a weak symbol in every object that uses it, and the linker keeps one copy
# for all callers: an AVX-512 copy then runs on CPUs without AVX-512 (SIGILL on an AVX2-only CPU). Such files
# compile only their own code for the instruction set (KVF_ISA_BEGIN after the portable headers,
# lib/core/isa_target.h) or use no shared inline code; a weak function with AVX-512 code is allowed only where no
# other object defines it too (helpers that only AVX-512 files use, e.g. transpose_16x16 when a -O1 build does not
# inline it).
# Usage: isa_objects_test.sh OBJECT...
set -euo pipefail
avx512=()
others=()
for obj in "$@"; do
  case "$(basename "$obj")" in
    *avx512*|*bf16*) avx512+=("$obj") ;;
    *) others+=("$obj") ;;
  esac
done
[ "${#avx512[@]}" -gt 0 ] || { echo "FAIL: no AVX-512 object among the $# given"; exit 1; }

# Weak functions of the AVX-512 objects whose instructions touch a zmm or an opmask register.
with_avx512=$(for obj in "${avx512[@]}"; do
  weak=$(nm --defined-only "$obj" | awk '$2 == "W" {print $3}')
  [ -z "$weak" ] && continue
  objdump -d --no-show-raw-insn "$obj" | awk -v list="$weak" '
    BEGIN { n = split(list, names, "\n"); for (i = 1; i <= n; i++) want["<" names[i] ">:"] = 1 }
    /^[0-9a-f]+ <.*>:$/ { current = ($2 in want) ? substr($2, 2, length($2) - 3) : ""; next }
    current != "" && /%zmm|%k[1-7]/ { print current }'
done | sort -u)
# The weak symbols every other object defines.
elsewhere=$(for obj in "${others[@]}"; do nm --defined-only "$obj" | awk '$2 == "W" {print $3}'; done | sort -u)
shared=$(comm -12 <(echo "$with_avx512") <(echo "$elsewhere") | grep -v '^$' || true)
if [ -n "$shared" ]; then
  echo "FAIL: weak functions compiled with AVX-512 that portable objects define too (the linker may pick the AVX-512 copy):"
  echo "$shared" | c++filt
  exit 1
fi
echo "ok: ${#avx512[@]} AVX-512 objects share no AVX-512 code with the ${#others[@]} others"
