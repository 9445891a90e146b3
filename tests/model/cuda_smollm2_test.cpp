// SmolLM2 on the CUDA backend against the CPU backend: a prompt's logits at every position and its KV, then a
// second request over the first one's KV at other positions. Skipped, saying why, where no GPU is visible.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "model/decoder.h"
#include "support/model_files.h"
#include "support/test_values.h"

namespace kvf {
namespace {

TEST(CudaSmollm2, LogitsMatchTheCpuBackend) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << why;
  const auto cpu = make_cpu_backend();
  const auto gpu = make_cuda_backend();
  const auto on_cpu = Decoder::load(test::smollm2_gguf(), *cpu, ComputeMode::F32);  // the CUDA backend computes in f32
  const auto on_gpu = Decoder::load(test::smollm2_gguf(), *gpu, ComputeMode::F32);
  const std::vector<int32_t> prompt =
      test::smollm2_tokenizer().encode("The tower is 324 metres tall, about the same height as an 81-storey "
                                       "building, and the tallest structure in Paris.", false, false);
  ForwardRequest r;
  r.tokens = prompt;
  r.positions = test::iota_positions((int64_t)prompt.size());
  r.logit_rows = test::iota_positions((int64_t)prompt.size());
  r.return_kv = true;
  const ForwardResult a = on_cpu->forward(r), b = on_gpu->forward(r);
  EXPECT_LT(test::max_abs_diff(a.logits, b.logits), 2e-3);
  // The prompt's KV re-placed 100 positions later under a new question (RoPE applied as keys are read).
  ForwardRequest later;
  later.tokens = {(int32_t)prompt[3], (int32_t)prompt[5]};
  later.positions = {(int32_t)prompt.size() + 100, (int32_t)prompt.size() + 101};
  later.logit_rows = {0, 1};
  KvSegment cpu_kv = a.kv, gpu_kv = b.kv;
  for (int32_t& p : cpu_kv.positions) p += 100;
  for (int32_t& p : gpu_kv.positions) p += 100;
  ForwardRequest cpu_later = later, gpu_later = later;
  cpu_later.view = {&cpu_kv};
  gpu_later.view = {&gpu_kv};
  EXPECT_LT(test::max_abs_diff(on_cpu->forward(cpu_later).logits, on_gpu->forward(gpu_later).logits), 2e-3);
}

}  // namespace
}  // namespace kvf
