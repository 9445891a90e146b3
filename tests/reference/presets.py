"""The decoder presets the reference scripts cover: where scripts/setup.sh installs each GGUF (the paths of
lib/io/model_paths.cpp), its dequantized F32 copy and the name of the reference over its own quantized weights.
A preset's fixtures are tests/fixtures/tokens_<name>.json and logits_<name>.json."""
import os
from dataclasses import dataclass
from pathlib import Path

KVFUSE_HOME = Path(os.environ.get("KVFUSE_HOME", Path.home() / ".cache" / "kvfuse"))
MODELS = KVFUSE_HOME / "models"


@dataclass(frozen=True)
class Preset:
    name: str        # as --model takes it
    gguf: str        # under $KVFUSE_HOME/models
    f32_copy: str    # the dequantized F32 copy make_llama_fixtures.py writes, beside the GGUF
    quant: str       # the reference over the file's own weights: its tensor format, as a fixture key

    @property
    def path(self):
        return MODELS / self.gguf

    @property
    def f32_path(self):
        return self.path.with_name(self.f32_copy)


PRESETS = {p.name: p for p in [
    Preset("smollm2", "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.F32.gguf", "q4_1"),
    Preset("qwen0.5b", "qwen0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-f32.gguf",
           "q4_k_m"),
    Preset("qwen1.5b", "qwen1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-1.5b-instruct-f32.gguf",
           "q4_k_m"),
]}
