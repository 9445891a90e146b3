#!/usr/bin/env python3
"""Golden tokenizer fixtures from llama.cpp (through llama-cpp-python), an implementation independent of kvfuse.

Writes tests/fixtures/tokens_<preset>.json for a decoder preset's GGUF vocabulary (presets.py):
  cases  for each text: llama.cpp's ids without special-token parsing ("ids"), with it where they differ
         ("ids_special"), and llama_detokenize of them (special tokens rendered, and skipped);
  vocab  size, BOS/EOS, add_bos and the end-of-generation ids llama.cpp derives;
  chats  conversations rendered by jinja2 from the GGUF's own tokenizer.chat_template (as transformers renders
         it) and the ids of each rendering with special-token parsing.
Texts that are not UTF-8 are stored as hex ("text_hex"), like any decoded text that is not.

Run it with the reference venv (scripts/setup-reference.sh):
  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_token_fixtures.py --preset qwen0.5b
--random N adds N more random strings (fixed seed) and --out elsewhere makes a larger comparison set for
development without touching the committed fixture.
"""
import argparse
import ctypes
import json
import random
from pathlib import Path

import gguf
import jinja2.sandbox
import llama_cpp
from presets import PRESETS

REPO = Path(__file__).resolve().parents[2]

PYTHON_CODE = '''def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


if __name__ == "__main__":
    print([fib(i) for i in range(10)])  # [0, 1, 1, 2, ...]
'''

CPP_CODE = '''#include <vector>

template <typename T>
class Stack {
 public:
  void push(const T& value) { items_.push_back(value); }
  T pop() {
    T top = items_.back();
    items_.pop_back();
    return top;
  }

 private:
  std::vector<T> items_;
};

int main(int argc, char** argv) {
\tif (argc > 1 && argv[1][0] == '-') { return 1; }
\treturn 0;
}
'''

TEXTS = [
    # empty, single characters, whitespace
    "", " ", "  ", "\t", "\n", "\r\n", "a", "A", "0", ".", "'",
    "a  b", "a   b", "a \t b", "\n\n\n", "a\n\nb", " \t x", "trailing spaces   ", "   leading spaces",
    "tabs\tbetween\twords", "\t\tindented", "line one\nline two\r\nline three\rend", "mixed \n \n  \n",
    "word\u00a0with\u00a0nbsp", "next\u0085line", "line\u2028separator\u2029paragraph", "ideographic\u3000space",
    "en\u2002em\u2003thin\u2009spaces", "zero\u200bwidth\u200cnon\u200djoiner",
    # prose
    "Hello, world!", "Hello world", "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
    "Retrieval-augmented generation (RAG) combines a retriever with a generator; the retriever finds passages "
    "and the generator writes the answer.",
    "Mr. Smith went to Washington D.C. on Jan. 5th, 2024 at 3:30 p.m.",
    "\"Quoted,\" she said. 'Single quotes' and `backticks`.",
    "e.g. i.e. etc. vs. cf.", "ALL CAPS SENTENCE WITH SHOUTING", "camelCaseIdentifier and snake_case_identifier",
    "A sentence. Another one! A question? An exclamation!? Ellipsis...",
    # digits and numbers
    "1234567890123", "3.14159", "1,000,000", "-42", "+7", "1e-10", "0x1F", "1/2", "50%", "$19.99", "€5,00",
    "2024-01-15", "12:34:56", "v1.2.3", "100km", "3rd", "1st place", "192.168.0.1", "phone: +1 (555) 123-4567",
    "9" * 40, "0.000001", "2^32 = 4294967296", "½ ¼ ¾", "²³¹ superscripts", "٠١٢٣٤٥ Arabic-Indic digits",
    "१२३ Devanagari digits", "Ⅻ roman numeral", "①②③ circled",
    # punctuation runs
    "!!!???...", "---", "''", "\"\"", "...", "?!", "((()))", "[]{}<>", "@#$%^&*", "~~~", "___", "+++===",
    "-->", "<--", "=>", "::", "//", "/* */", "#!/bin/bash", "a,b;c:d", "end.", "(parenthesis)", "«guillemets»",
    "“curly quotes” and ‘single’", "em—dash and en–dash", "…", "¡Hola! ¿Qué tal?",
    # contractions
    "don't", "I'M", "we'll", "they're", "you've", "she'd", "it's", "DON'T", "We'Ll", "'s", "'t", "'re",
    "rock 'n' roll", "o'clock", "the dog's bone", "students' papers", "I'm sure you'll see they've gone",
    "can't won't shouldn't", "' s", "''s",
    # accented Latin, other scripts
    "café naïve Ærøskøbing", "Crème brûlée à la française", "Straße Grüße Übermut", "ñandú pingüino",
    "Łódź Kraków Gdańsk", "Čeština Škoda Žižkov", "Ελληνικά γράμματα", "Русский текст, пример.",
    "日本語のテキスト", "中文", "中文文本处理，标点符号。", "한국어 텍스트", "ひらがなとカタカナ",
    "العربية من اليمين إلى اليسار", "עברית", "हिन्दी भाषा", "ภาษาไทย", "Tiếng Việt có dấu",
    "ქართული", "Հայերեն", "አማርኛ", "e\u0301 combining acute", "n\u0303o\u0308", "Z\u0351\u0302a\u0327lgo",
    # emoji and symbols
    "👍🏽 🎉", "👨‍👩‍👧‍👦 family", "🇫🇷🇯🇵 flags", "❤️ heart", "smile 😀😃😄", "∑∫√∞≠≤≥", "→ ← ↑ ↓", "©®™",
    "♠♣♥♦", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math", "𝟘𝟙𝟚 double-struck digits", "🀄 mahjong", "𓀀 hieroglyph",
    # code
    PYTHON_CODE, CPP_CODE, "x = [i**2 for i in range(10) if i % 2 == 0]",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;", "<div class=\"main\"><p>Hi</p></div>",
    '{"key": "value", "list": [1, 2, 3], "nested": {"a": null}}', "    four spaces\n        eight spaces",
    "if (a && b || !c) { return a->b[0]; }", "$ ls -la | grep '.txt' > out.log 2>&1",
    "def f(*args, **kwargs): pass", "std::vector<std::pair<int, float>> v;",
    # URLs, paths, identifiers
    "https://example.com/path/to/page?query=1&lang=en#section", "http://localhost:8080/api/v1/items",
    "mailto:someone@example.org", "C:\\Users\\name\\Documents\\file.txt", "/usr/local/lib/python3.11/site-packages",
    "user@example.com", "#hashtag @mention", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    # mixed scripts
    "English 日本語 Русский 123", "Mixed中English文", "αβγ abc 123 ÄÖÜ", "price: 100円 or $1",
    "Emoji👍inside😀words", "tab\t日本\tmix", "CJK。Punctuation、here",
    # very long words and repetitions
    "a" * 300, "supercalifragilisticexpialidocious" * 5, "ab" * 150, " " * 50, "\n" * 20, "-" * 80,
    "Pneumonoultramicroscopicsilicovolcanoconiosis", "x" * 17 + " " + "y" * 33,
    # valid UTF-8 that looks suspicious
    "\ufeffbyte order mark", "\ufffd replacement character", "max code point \U0010ffff", "private \ue000\uf8ff",
    "soft\u00adhyphen", "noncharacters \ufdd0\uffff", "\u202eright-to-left override", "tag \U000e0041\U000e007f",
    "variation\ufe0f selector", "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ１２３", "ﬁ ligature", "Å angstrom Ω ohm",
    # control characters (some bytes have no token in this vocabulary)
    "bell\x07char", "null\x00byte", "\x04\x06\x13\x14\x16\x1d", "escape\x1b[0m", "del\x7f",
    # ChatML and other special-token texts
    "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "text before<|im_end|>text after", "<|im_start|><|im_end|><|im_start|>", " <|im_start|> spaced ",
    "<|im_start", "im_start|>", "<|im_start|x", "<<|im_start|>>", "<|endoftext|><|endoftext|>",
    "<repo_name>kvfuse<file_sep>lib/text.cpp<filename>", "<jupyter_code>print(1)<jupyter_output>1",
    "<gh_stars>100", "<issue_start>bug<issue_comment>fix<issue_closed>", "<empty_output>",
    # Qwen2.5's special and added tokens (plain text to SmolLM2)
    "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n<|fim_middle|>", "<|repo_name|>kvfuse\n<|file_sep|>lib/a.cpp",
    "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|object_ref_start|>x<|object_ref_end|>", "<|fim_pad|><|fim_pad|>",
]

# Bytes that are not UTF-8 (stored as hex): llama.cpp reads each bad byte as U+FFFD.
INVALID = [b"\xff", b"abc\xe3\x81", b"\x80\x80 lone continuations", b"\xc0\x80 overlong nul",
           b"\xf0\x9f\x98 truncated emoji", b"ok \xfe\xff bad", b"<|im_end|>\xe3<|im_start|>"]

# Character pools for the random strings: every class the pre-tokenizers treat differently.
POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " ", "   \t\n\r",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "'sltmdrve", "éèêëàâäçñøåæœßÀÉÖÜ", "日本語中文한국어ひらがなカタカナ",
    "😀👍🏽🎉❤️🇫🇷", "\u0301\u0303\u0308", "\u00a0\u2009\u3000\u0085\u2028", "αβγδΑΒΓΔабвгдАБВГД",
    "٠١٢١٢٣²³½①Ⅻ", "¡¿«»“”‘’—–…•", "∑∫√∞≠≤≥→←©®™", "\x00\x04\x07\x1b\x7f", "\u200b\u200d\ufeff",
]


def random_texts(n, seed):
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        length = rng.randint(1, 40)
        pools = rng.sample(POOLS, rng.randint(1, 4))
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(length)))
    return texts


def put_bytes(record, key, data):
    try:
        record[key] = data.decode("utf-8")
    except UnicodeDecodeError:
        record[key + "_hex"] = data.hex()


class Reference:
    def __init__(self, model_path):
        self.llm = llama_cpp.Llama(model_path=str(model_path), vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n_tokens = llama_cpp.llama_vocab_n_tokens(self.vocab)

    def tokenize(self, data, parse_special):
        capacity = 3 * len(data) + 8  # an invalid byte becomes U+FFFD: up to three byte tokens
        buf = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, capacity, False, parse_special)
        assert n >= 0, f"tokenize failed for {data!r}"
        return list(buf[:n])

    def detokenize(self, ids, unparse_special):
        arr = (llama_cpp.llama_token * max(len(ids), 1))(*ids)
        capacity = 64 + 64 * len(ids)
        buf = ctypes.create_string_buffer(capacity)
        n = llama_cpp.llama_detokenize(self.vocab, arr, len(ids), buf, capacity, False, unparse_special)
        assert n >= 0, f"detokenize failed for {ids}"
        return buf.raw[:n]

    def case(self, data):
        record = {}
        put_bytes(record, "text", data)
        record["ids"] = self.tokenize(data, False)
        put_bytes(record, "decoded", self.detokenize(record["ids"], True))
        special = self.tokenize(data, True)
        if special != record["ids"]:
            record["ids_special"] = special
            put_bytes(record, "decoded_special", self.detokenize(special, True))
            put_bytes(record, "decoded_skip_special", self.detokenize(special, False))
        return record


def chats(reference, template_source, bos, eos):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(template_source)
    conversations = [
        ([{"role": "user", "content": "What is the capital of France?"}], True),
        ([{"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
          {"role": "user", "content": "Why is the sky blue?"},
          {"role": "assistant", "content": "Air scatters blue light more than red light."},
          {"role": "user", "content": "And sunsets?"}], True),
        ([{"role": "user", "content": "Translate to Japanese:\n  \"Good morning\" 👋"},
          {"role": "assistant", "content": "おはようございます。\n```\nprint('ok')\n```"}], False),
        ([], True),
    ]
    out = []
    for messages, add_generation_prompt in conversations:
        try:
            rendered = template.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                       bos_token=bos, eos_token=eos)
        except jinja2.exceptions.UndefinedError as e:  # Qwen2.5's template reads messages[0]: no empty chat
            print(f"chat {messages} left out: the template cannot render it ({e})")
            continue
        out.append({"messages": messages, "add_generation_prompt": add_generation_prompt, "rendered": rendered,
                    "ids": reference.tokenize(rendered.encode(), True)})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=PRESETS, default="smollm2", help="the decoder (default: %(default)s)")
    ap.add_argument("--model", help="its GGUF (default: where scripts/setup.sh puts it)")
    ap.add_argument("--out", help="default: tests/fixtures/tokens_<preset>.json")
    ap.add_argument("--random", type=int, default=40, help="random strings added to the fixed ones")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    args.model = args.model or str(PRESETS[args.preset].path)
    args.out = args.out or str(REPO / "tests" / "fixtures" / f"tokens_{args.preset}.json")
    if not Path(args.model).exists():
        ap.error(f"--model {args.model}: no such file (scripts/setup.sh {args.preset} fetches it)")

    reader = gguf.GGUFReader(args.model)
    template_source = reader.fields["tokenizer.chat_template"].contents()
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()

    reference = Reference(args.model)
    bos = llama_cpp.llama_vocab_bos(reference.vocab)
    eos = llama_cpp.llama_vocab_eos(reference.vocab)
    texts = [t.encode("utf-8") for t in TEXTS + random_texts(args.random, args.seed)] + INVALID
    fixture = {
        "reference": f"llama.cpp bundled with llama-cpp-python {llama_cpp.__version__}",
        "model": Path(args.model).name,
        "vocab": {
            "n_tokens": reference.n_tokens,
            "bos": bos,
            "eos": eos,
            "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(reference.vocab)),
            "eog": [i for i in range(reference.n_tokens) if llama_cpp.llama_vocab_is_eog(reference.vocab, i)],
        },
        "cases": [reference.case(data) for data in texts],
        "chats": chats(reference, template_source, tokens[bos], tokens[eos]),
    }
    Path(args.out).write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {args.out}: {len(fixture['cases'])} texts, {len(fixture['chats'])} chats")


if __name__ == "__main__":
    main()
