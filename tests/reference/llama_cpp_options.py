"""llama-cpp-python settings shared by the fixture script and the benchmark driver."""
import contextlib

import llama_cpp


@contextlib.contextmanager
def extra_bufts(enabled):
    """Sets llama.cpp's use_extra_bufts for models loaded inside the block. Llama() has no argument for it, so the
    default model parameters it starts from are patched. On CPUs with AMX, llama-cpp-python 0.3.16 repacks Q4_1 and
    Q8_0 weights for its AMX kernels when the flag is on, and those give wrong logits for batches of 32 tokens or
    more (ggml-org/llama.cpp#16315, fixed by #19925): references load with it off."""
    default = llama_cpp.llama_cpp.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = enabled
        return p

    llama_cpp.llama_cpp.llama_model_default_params = params
    try:
        yield
    finally:
        llama_cpp.llama_cpp.llama_model_default_params = default
