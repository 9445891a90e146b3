#!/usr/bin/env bash
# Dependencies between lib/ folders point one way (scripts/check_layers.py): the real tree passes, and a copy with
# an include pointing up (prep -> compress) and one sideways (store -> model) fails, naming both lines.
# Usage: layer_rule_test.sh [REPO_ROOT]   (default: the repository this script is in)
. "$(dirname "$0")/common.sh"
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
checker=$root/scripts/check_layers.py

# 1. The real tree.
python3 "$checker" --root "$root" >"$work/out" 2>&1 || fail "the real tree breaks the layer rule"
cat "$work/out"

# 2. A copy of lib/ with the four kinds of bad include this project once had, each appended as the last line of
#    its file: prep -> compress and prep -> fusion (up), store -> model and text -> io (sideways).
mkdir "$work/tree"
cp -R "$root/lib" "$work/tree/lib"
pick() { (cd "$work/tree" && find "lib/$1" -name '*.cpp' | sort | sed -n "${2}p"); }
prep_file=$(pick prep 1)
prep2_file=$(pick prep 2)
store_file=$(pick store 1)
text_file=$(pick text 1)
[ -n "$prep_file" ] && [ -n "$prep2_file" ] && [ -n "$store_file" ] && [ -n "$text_file" ] ||
  fail "too few .cpp files in lib/prep, lib/store or lib/text"
append() { printf '\n#include "%s"\n' "$2" >>"$work/tree/$1"; wc -l <"$work/tree/$1" | tr -d ' '; }
prep_line=$(append "$prep_file" compress/compress_stage.h)
prep2_line=$(append "$prep2_file" fusion/query_engine.h)
store_line=$(append "$store_file" model/decoder.h)
text_line=$(append "$text_file" io/gguf.h)

status=0
python3 "$checker" --root "$work/tree" >"$work/out" 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "checker exited $status on the broken copy, expected 1"
grep -qF "$prep_file:$prep_line: prep may not include compress/compress_stage.h (prep -> compress points up" \
  "$work/out" || fail "prep -> compress at $prep_file:$prep_line not reported"
grep -qF "$store_file:$store_line: store may not include model/decoder.h (store -> model" \
  "$work/out" || fail "store -> model at $store_file:$store_line not reported"
grep -qF "$prep2_file:$prep2_line: prep may not include fusion/query_engine.h (prep -> fusion points up" \
  "$work/out" || fail "prep -> fusion at $prep2_file:$prep2_line not reported"
grep -qF "$text_file:$text_line: text may not include io/gguf.h (text -> io" \
  "$work/out" || fail "text -> io at $text_file:$text_line not reported"
echo "ok: broken copy rejected:"
grep -F -e "$prep_file:$prep_line:" -e "$prep2_file:$prep2_line:" -e "$store_file:$store_line:" \
  -e "$text_file:$text_line:" "$work/out"
