#!/usr/bin/env bash
# Files compiled for one instruction set (AVX2, AVX-512) must not define code that other files share. A shared
# inline function (std::vector's members, TBB, kvf::fail) is emitted as a weak symbol in every object that uses it,
# and the linker keeps one copy for all callers: a copy compiled for AVX-512 then runs on CPUs without it (SIGILL
# on an AVX2-only CPU). Such files either define no weak function (-m flags for the whole file) or compile only
# their own code for the instruction set (#pragma GCC target after the portable headers); then their weak copies
# use no AVX-512 register. Usage: isa_objects_test.sh OBJECT...
set -euo pipefail
fail=0
checked=0
for obj in "$@"; do
  case "$(basename "$obj")" in
    *avx2*|*avx512*|*bf16*) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  weak=$(nm --defined-only "$obj" | awk '$2 == "W" {print $3}')
  [ -z "$weak" ] && continue
  # Each weak function's instructions: none may touch a zmm or an opmask register (AVX-512).
  bad=$(objdump -d --no-show-raw-insn "$obj" | awk -v list="$weak" '
    BEGIN { n = split(list, names, "\n"); for (i = 1; i <= n; i++) want["<" names[i] ">:"] = 1 }
    /^[0-9a-f]+ <.*>:$/ { current = ($2 in want) ? $2 : "" ; next }
    current != "" && /%zmm|%k[1-7]/ { print current }' | sort -u)
  if [ -n "$bad" ]; then
    echo "FAIL: $obj: shared (weak) functions compiled with AVX-512: $(echo "$bad" | tr '\n' ' ')"
    fail=1
  fi
done
[ "$checked" -gt 0 ] || { echo "FAIL: no instruction-set object among the $# given"; exit 1; }
[ "$fail" = 0 ] && echo "ok: $checked instruction-set objects share no AVX-512 code"
exit "$fail"
