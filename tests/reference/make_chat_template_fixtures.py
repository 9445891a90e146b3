#!/usr/bin/env python3
"""Expected chat-template renderings from Python's jinja2, as transformers renders a model's chat_template.

Reads tests/fixtures/chat_templates/*.jinja (the models' own templates: Mistral-7B-Instruct-v0.2,
Llama-3.1-8B-Instruct and Qwen2.5-7B-Instruct as llama.cpp's models/templates/ and tests/test-chat-template.cpp
hold them; Qwen2.5-Coder-0.5B-Instruct's, in the qwen0.5b GGUF, is byte for byte Qwen2.5-7B-Instruct's; SmolLM2's
from its GGUF) and writes tests/fixtures/chat_templates/expected.json: for each template and conversation, the
rendering with jinja2's ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks) and transformers' globals
(raise_exception, strftime_now; no date_string, so Llama 3.1 writes its default date). A conversation the
template refuses (raise_exception) is recorded with its error message instead.
tests/unit/jinja_chat_template_test.cpp renders the same with minja and compares byte for byte.

  python3 tests/reference/make_chat_template_fixtures.py        (needs Jinja2; the reference venv has 3.1.6)
"""
import datetime
import json
import os

import jinja2
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "fixtures", "chat_templates")

# template file -> (bos_token, eos_token) of the model.
TEMPLATES = {
    "mistralai-Mistral-7B-Instruct-v0.2.jinja": ("<s>", "</s>"),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("", "<|im_end|>"),
    "HuggingFaceTB-SmolLM2-135M-Instruct.jinja": ("<|im_start|>", "<|im_end|>"),
}

SYSTEM = {"role": "system", "content": "You answer questions from the passages the user gives."}
CONVERSATIONS = [
    ("user", [{"role": "user", "content": "What is the capital of France?"}], True),
    ("system_user", [SYSTEM, {"role": "user", "content": "Passage: Paris is the capital.\nQuestion: capital?"}],
     True),
    ("multi_turn", [SYSTEM,
                    {"role": "user", "content": "  Why is the sky blue?\n"},
                    {"role": "assistant", "content": "Air scatters blue light more than red light."},
                    {"role": "user", "content": "And sunsets? \"quoted\" 👋"}], True),
    ("multi_turn_no_prompt", [{"role": "user", "content": "Hi"},
                              {"role": "assistant", "content": "Hello! How can I help?"}], False),
    ("bad_roles", [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}], True),
]


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def strftime_now(fmt):
    return datetime.datetime.now().strftime(fmt)


def main():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    cases = []
    for name, (bos, eos) in TEMPLATES.items():
        with open(os.path.join(DIR, name), encoding="utf-8") as f:
            template = env.from_string(f.read())
        for conv, messages, gen in CONVERSATIONS:
            case = {"template": name, "conversation": conv, "bos_token": bos, "eos_token": eos,
                    "messages": messages, "add_generation_prompt": gen}
            try:
                case["rendered"] = template.render(messages=messages, add_generation_prompt=gen, bos_token=bos,
                                                   eos_token=eos)
            except TemplateError as e:
                case["error"] = str(e)
            cases.append(case)
    with open(os.path.join(DIR, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"jinja2": jinja2.__version__, "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases ({sum('error' in c for c in cases)} refused by their template)")


if __name__ == "__main__":
    main()
