#include "generate_command.h"

#include "common/cli.h"

#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "io/hf_folder.h"
#include "io/model_paths.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "model/gguf_tokenizer.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"

namespace kvf::cli {
namespace {

struct GenerateArgs {
  std::string model = "smollm2";
  std::string prompt;
  std::string system;
  bool chat = false;
  int max_tokens = 128;
  int threads = 0;
  std::string backend = "cpu";
  std::string compute = "fast";
  bool json = false;
};

void run_generate(const GenerateArgs& a) {
  const int threads = thread_count(a.threads);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  const std::string path = resolve_model(a.model);

  const auto t_load = std::chrono::steady_clock::now();
  const auto file = open_decoder_file(path);
  const BpeTokenizer tokenizer(bpe_vocabulary_from_gguf(*file));
  auto backend = make_backend(a.backend);
  auto decoder = Decoder::load(path, *backend, compute_mode_from_name(a.compute));
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();

  std::vector<int32_t> prompt_ids;
  if (a.chat) {
    const ChatTemplate tmpl = chat_template_from_gguf(*file);
    if (!tmpl.note().empty()) std::fprintf(stderr, "note: %s\n", tmpl.note().c_str());
    std::vector<ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.prompt});
    // The rendered template already opens with its own special tokens: no extra BOS.
    prompt_ids = tokenizer.encode(tmpl.render(messages, /*add_generation_prompt=*/true), /*add_special=*/false,
                                  /*parse_special=*/true);
  } else {
    prompt_ids = tokenizer.encode(a.prompt, /*add_special=*/true, /*parse_special=*/false);
  }

  GreedyOptions opts;
  opts.max_new_tokens = a.max_tokens;
  opts.is_end_token = [&](int32_t id) { return tokenizer.is_eog(id); };
  GreedyResult r;
  try {
    r = generate_greedy(*decoder, prompt_ids, opts);
  } catch (const Error& e) {  // e.g. logits that are not finite: say which model gave them
    fail("model ", path, ": ", e.what());
  }
  const std::string text = tokenizer.decode(r.tokens);
  const double prefill_tps = prompt_ids.size() / (r.prefill_ms / 1000.0);
  const double decode_tps = r.tokens.size() > 1 ? (r.tokens.size() - 1) / (r.decode_ms / 1000.0) : 0.0;

  if (a.json) {
    const nlohmann::json out = {{"model", path},
                                {"text", text},
                                {"token_ids", r.tokens},
                                {"prompt_tokens", prompt_ids.size()},
                                {"generated_tokens", r.tokens.size()},
                                {"stopped_by", r.ended ? "end_token" : "max_tokens"},
                                {"threads", threads},
                                {"compute", a.compute},
                                {"load_ms", load_ms},
                                {"ttft_ms", r.prefill_ms},
                                {"decode_ms", r.decode_ms},
                                {"prefill_tokens_per_s", prefill_tps},
                                {"decode_tokens_per_s", decode_tps}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s\n", text.c_str());
    std::fprintf(stderr,
                 "[%zu prompt tokens, %zu generated | load %.0f ms | ttft %.1f ms (%.0f tok/s prefill) | "
                 "decode %.1f tok/s | %d threads, %s]\n",
                 prompt_ids.size(), r.tokens.size(), load_ms, r.prefill_ms, prefill_tps, decode_tps, threads,
                 a.compute.c_str());
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Continue a prompt greedily with a decoder (no retrieval)");
  cmd->footer(
      "Examples:\n"
      "  kvrun generate --model smollm2 --chat --prompt \"What is a KV cache?\"\n"
      "  kvrun generate --model qwen0.5b --chat --prompt \"Write a C function that reverses a string.\"\n"
      "  kvrun generate --model ./model.gguf --prompt \"Once upon a time\" --max-tokens 32 --json\n"
      "  kvrun generate --model ./Qwen2.5-0.5B-Instruct --chat --prompt \"Hi\"   (a Hugging Face folder)\n"
      "The presets smollm2, qwen0.5b and qwen1.5b are GGUF files that scripts/setup.sh installs in\n"
      "$KVFUSE_HOME/models (`scripts/setup.sh qwen1.5b` fetches that one).");
  cmd->add_option("--model", args->model, "a preset (smollm2, qwen0.5b, qwen1.5b), a GGUF file or a Hugging Face folder")
      ->capture_default_str();
  cmd->add_option("--prompt", args->prompt, "the prompt text")->required();
  cmd->add_flag("--chat", args->chat, "wrap the prompt as a user message in the model's chat template");
  cmd->add_option("--system", args->system, "system message for --chat (default: the template's own)");
  cmd->add_option("--max-tokens", args->max_tokens, "most tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--threads", args->threads, "worker threads (default: all cores)")->check(CLI::Range(0, 4096));
  cmd->add_option("--backend", args->backend, "where the model runs: cpu | cuda (built with nvcc, needs a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--compute", args->compute, "fast: compact weights, the CPU's fastest kernels; f32: the reference math")
      ->capture_default_str()
      ->check(accepted_by(compute_mode_from_name));
  cmd->add_flag("--json", args->json,
                "print one JSON object: text, token_ids, prompt_tokens, ttft_ms, prefill_tokens_per_s, "
                "decode_tokens_per_s, ...");
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace kvf::cli
