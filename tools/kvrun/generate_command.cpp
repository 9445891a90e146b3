#include "generate_command.h"

#include "common/cli.h"
#include "common/common_options.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stopwatch.h"
#include "io/gguf.h"
#include "io/hf_folder.h"
#include "io/model_paths.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "model/gguf_tokenizer.h"
#include "text/tokenizer.h"
#include "text/chat_template.h"

namespace kvf::cli {
namespace {

struct GenerateArgs {
  std::string model = "smollm2";
  std::string prompt;
  std::string system;
  bool chat = false;
  int max_tokens = 128;
  std::string backend = "cpu";
  std::string compute = "fast";
  CommonOptions common;
};

void run_generate(const GenerateArgs& a) {
  const CommandSettings settings(a.common);
  const int threads = settings.threads();
  const std::string path = resolve_model(a.model);

  const auto t_load = std::chrono::steady_clock::now();
  const auto file = open_decoder_file(path);
  const std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_gguf(*file);
  auto backend = make_backend(a.backend);
  auto decoder = Decoder::load(path, *backend, compute_mode_from_name(a.compute));
  const double load_ms = ms_since(t_load);

  std::vector<int32_t> prompt_ids;
  if (a.chat) {
    const ChatTemplate tmpl = chat_template_from_gguf(*file);
    if (!tmpl.note().empty()) note("note: %s\n", tmpl.note().c_str());
    std::vector<ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.prompt});
    // The rendered template already opens with its own special tokens: no extra BOS.
    prompt_ids = tokenizer->encode(tmpl.render(messages, /*add_generation_prompt=*/true), /*add_special=*/false,
                                  /*parse_special=*/true);
  } else {
    prompt_ids = tokenizer->encode(a.prompt, /*add_special=*/true, /*parse_special=*/false);
  }

  GreedyOptions opts;
  opts.max_new_tokens = a.max_tokens;
  opts.is_end_token = [&](int32_t id) { return tokenizer->is_eog(id); };
  GreedyResult r;
  try {
    r = generate_greedy(*decoder, prompt_ids, opts);
  } catch (const Error& e) {  // e.g. logits that are not finite: say which model gave them
    fail("model ", path, ": ", e.what());
  }
  const std::string text = tokenizer->decode(r.tokens);
  const double prefill_tps = r.prefill_ms > 0 ? prompt_ids.size() / (r.prefill_ms / 1000.0) : 0.0;
  const double decode_tps = decode_tokens_per_s(r.tokens.size(), r.decode_ms);

  // The names kvrun ask, batch and eval give the same timings: with no retrieval, TTFT is the prompt's prefill.
  if (a.common.json) {
    print_json({{"model", path},
                {"text", text},
                {"token_ids", r.tokens},
                {"n_prompt_tokens", prompt_ids.size()},
                {"generated_tokens", r.tokens.size()},
                {"stopped_by", r.ended ? "end_token" : "max_tokens"},
                {"threads", threads},
                {"compute", a.compute},
                {"timings_ms",
                 {{"model_load", load_ms}, {"prefill", r.prefill_ms}, {"ttft", r.prefill_ms}, {"decode", r.decode_ms}}},
                {"tokens_per_s", {{"prefill", prefill_tps}, {"decode", decode_tps}}}});
  } else {
    std::printf("%s\n", text.c_str());
    note("[%zu prompt tokens | model load %.0f ms | ttft %.1f ms = prefill %.1f (%.0f tokens/s) | decode %zu tokens "
         "in %.1f ms, %.1f tokens/s | %d threads, %s]\n",
         prompt_ids.size(), load_ms, r.prefill_ms, r.prefill_ms, prefill_tps, r.tokens.size(), r.decode_ms, decode_tps,
         threads, a.compute.c_str());
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
  cmd->add_option("--backend", args->backend, "where the model runs: cpu | cuda (built with nvcc, needs a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--compute", args->compute, "fast: compact weights, the CPU's fastest kernels; f32: the reference math")
      ->capture_default_str()
      ->check(accepted_by(compute_mode_from_name));
  add_common_options(*cmd, args->common,
                     "print one JSON object: text, token_ids, n_prompt_tokens, generated_tokens, timings_ms "
                     "{model_load, prefill, ttft, decode}, tokens_per_s {prefill, decode}, ...");
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace kvf::cli
