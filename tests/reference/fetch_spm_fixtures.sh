#!/bin/sh
# Copies llama.cpp's SentencePiece-style vocabulary fixture into tests/fixtures/spm/ and checks it: Llama 2's
# vocabulary as a vocabulary-only GGUF (tokenizer.ggml.model = llama), the test texts and the ids llama.cpp's
# test-tokenizer-0 gives them (add_special off, parse_special on). Source: the llama.cpp repository
# (github.com/ggml-org/llama.cpp), models/ggml-vocab-llama-spm.gguf{,.inp,.out}; the committed copies came from
# a snapshot at commit 1eeb523c3e0c7ffbd59469f5463dcbdecba3535e. CI reaches only PyPI and Debian, so the files are
# committed and this script, given a llama.cpp checkout (LLAMA_CPP=path), copies them from it and checks the sums.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
dst="$repo/tests/fixtures/spm"
if [ -n "${LLAMA_CPP:-}" ]; then
  mkdir -p "$dst"
  for f in ggml-vocab-llama-spm.gguf ggml-vocab-llama-spm.gguf.inp ggml-vocab-llama-spm.gguf.out; do
    cp "$LLAMA_CPP/models/$f" "$dst/$f"
  done
fi
cd "$dst"
sha256sum -c <<'SUMS'
16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69  ggml-vocab-llama-spm.gguf
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0  ggml-vocab-llama-spm.gguf.inp
ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29  ggml-vocab-llama-spm.gguf.out
SUMS
