#!/usr/bin/env python3
"""Golden embedder fixtures from HF `tokenizers` and sentence-transformers (on torch), independent of kvfuse.

Writes, for all-MiniLM-L6-v2 ($KVFUSE_HOME/models/all-minilm-l6-v2):
  tests/fixtures/wordpiece_minilm.json   ids of >= 200 strings from `tokenizers` loading the model's
                                         tokenizer.json, truncated as sentence-transformers truncates
                                         (max_seq_length from sentence_bert_config.json, [CLS] and [SEP] included)
  tests/fixtures/embeddings_minilm.json  sentence-transformers embeddings (normalised, rounded to 1e-6) of >= 50
                                         texts, one longer than max_seq_length
and a tiny random BERT in the file layout of bge-small-en-v1.5's repository (CLS pooling, Normalize, its own
vocab.txt, max_seq_length 24 so truncation shows) with sentence-transformers' embeddings of it:
  tests/fixtures/tiny_bert_cls/          the model folder (about 100 KB; weights as model.safetensors.fixture)
  tests/fixtures/embeddings_tiny_bert_cls.json

`tokenizers` classifies characters with Unicode tables from about 2016 (Unicode 9); kvfuse uses utf8proc's
current ones, so characters added or recategorised since behave differently (see lib/text/wordpiece.h). The
strings here use only characters on which both agree: check_tables() asserts it for every string.

Needs the reference venv (scripts/setup-reference.sh) plus torch, sentence-transformers and safetensors:
  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_embedder_fixtures.py
"""
import json
import os
import random
import shutil
import unicodedata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; never reach for a hub

import sentence_transformers
import tokenizers
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from transformers import BertConfig, BertModel

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
KVFUSE_HOME = Path(os.environ.get("KVFUSE_HOME", Path.home() / ".cache" / "kvfuse"))
MINILM = KVFUSE_HOME / "models" / "all-minilm-l6-v2"

WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis"
LONG_WORD_100 = ("abcdefghij" * 10)  # exactly max_input_chars_per_word
LONG_WORD_101 = LONG_WORD_100 + "k"

ARTICLE = (
    "The Amazon rainforest covers much of the Amazon basin of South America. This basin encompasses seven "
    "million square kilometres, of which five and a half million are covered by the rainforest. The region "
    "includes territory belonging to nine nations and 3,344 formally acknowledged indigenous territories. "
    "The majority of the forest is contained within Brazil, with 60% of the rainforest, followed by Peru with "
    "13%, Colombia with 10%, and with minor amounts in Bolivia, Ecuador, French Guiana, Guyana, Suriname, and "
    "Venezuela. Four nations have \"Amazonas\" as the name of one of their first-level administrative regions, "
    "and France uses the name \"Guiana Amazonian Park\" for its rainforest protected area. The Amazon represents "
    "over half of the planet's remaining rainforests, and comprises the largest and most biodiverse tract of "
    "tropical rainforest in the world, with an estimated 390 billion individual trees in about 16,000 species. "
)

TOKEN_TEXTS = [
    # empty, single characters, whitespace runs
    "", " ", "   ", "\t", "\n", "\r\n", "a", "A", "0", ".", "'", "a  b", "a \t\n b", "\n\n\nx\n\n\n",
    "   leading", "trailing   ", "tabs\tbetween\twords", "line one\nline two\r\nline three\rend",
    "word\u00a0with\u00a0nbsp", "ideographic\u3000space", "en\u2002em\u2003thin\u2009spaces",
    "line\u2028separator\u2029paragraph", "narrow\u202fnbsp and\u205fmath space", "ogham\u1680space",
    # control and format characters (dropped), NUL, U+FFFD
    "nul\u0000inside", "bell\u0007and\u0008backspace", "vertical\u000btab\u000cform feed", "next\u0085line",
    "file\u001cgroup\u001drecord\u001eunit\u001fseparators", "delete\u007fchar", "c1\u0080\u009fcontrols",
    "zero\u200bwidth\u200cnon\u200djoiner", "soft\u00adhyphen", "bom\ufeffinside", "\ufeffleading bom",
    "replacement\ufffdchar", "bidi\u202amarks\u202c and \u200eltr\u200f", "word\u2060joiner",
    "private\ue000use\uf8ff", "unassigned\u0378code point",
    # ASCII prose, mixed case
    "Hello, world!", "hello world", "HELLO WORLD", "HeLLo WoRLD", "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
    "Retrieval-augmented generation (RAG) combines a retriever with a generator.",
    "Mr. Smith went to Washington D.C. on Jan. 5th, 2024 at 3:30 p.m.",
    "\"Quoted,\" she said. 'Single quotes' and `backticks`.", "iPhone eBay McDonald's O'Neill",
    "CamelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_SNAKE",
    "don't won't can't shouldn't y'all'd've", "e-mail re-enter co-operate", "U.S.A. U.K. e.g. i.e. etc.",
    # punctuation runs, ASCII symbols BERT treats as punctuation
    "!!!", "???!!!...", "...", "--", "---", "—", "–", "a--b", "a...b", "(((nested)))", "[[link]]", "{{template}}",
    "$100", "5+5=10", "a^b", "x|y", "~tilde~", "<tag attr=\"v\">text</tag>", "#hashtag @mention",
    "path/to/file.txt", "C:\\Windows\\System32", "https://example.com/a?b=c&d=e#frag", "user@example.com",
    "a*b*c", "50%", "`code`", "\\n", "§1.2", "¡Hola! ¿Qué tal?", "«guillemets»", "„German quotes“",
    "“curly” ‘quotes’", "…ellipsis…", "•bullet", "·middle·dot", "†‡", "‰‱", "′″", "※",
    # numbers
    "0123456789", "3.14159265358979", "1,234,567.89", "-42", "+1 (555) 123-4567", "1e-10", "0x1F", "2024-01-15",
    "12:34:56", "99.9%", "1/2 3/4", "½ ¼ ¾", "²³", "①②③", "Ⅳ Ⅸ", "١٢٣", "१२३", "一二三", "12345678901234567890",
    # accents (stripped), composed and decomposed, ligatures
    "café", "cafe\u0301", "naïve", "résumé", "Zürich", "Ærøskøbing", "Œuvre", "straße", "ﬁnal ﬂow",
    "Ångström", "\u212b", "ÀÉÎÕÜ àéîõü", "Çà et là", "São Paulo", "Kraków", "Dvořák", "Smørrebrød", "İstanbul",
    "ı dotless", "ǅ titlecase", "x\u0301\u0302\u0303", "a\u0300\u0301\u0302\u0303\u0304\u0305", "\u0301alone",
    "Crème brûlée à la française", "ĀĒĪŌŪ āēīōū", "Ŝŝ Ĝĝ Ĥĥ", "Ḃḃ Ṡṡ", "ắằẳẵặ Tiếng Việt",
    # other scripts
    "Привет, мир!", "ПРИВЕТ", "Ελληνικά ΟΔΟΣ οδός", "עברית", "العربية", "हिन्दी", "ไทย", "한국어 텍스트",
    "日本語のテキスト", "ひらがな カタカナ", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ", "ｶﾀｶﾅ", "Ꭰ Cherokee", "ქართული", "Հայերեն",
    # CJK ideographs (spaced out), CJK punctuation
    "中文", "我爱北京天安门", "中文和English混合", "漢字かな交じり文", "，。！？", "「引用」", "（括弧）", "〜",
    "\U00020000\U0002a6d6", "\u3400\u4dbf", "\uf900\ufa0d", "\U0002f800", "\u2f00 kangxi", "\u3007 ideographic zero",
    # emoji and symbols (present since Unicode 6)
    "😀", "😀😃😄", "I ❤️ NY", "👍🏽", "👨‍👩‍👧", "🇺🇸", "☀☁☂", "★☆", "♠♣♥♦", "→←↑↓", "∑∏∫√∞", "©®™", "€£¥₹", "°C",
    # long words and the 100-character limit
    WORD, WORD.upper(), LONG_WORD_100, LONG_WORD_101, "a" * 100, "a" * 101, "é" * 100, "é" * 101,
    "x\u0301" * 100, "ab" * 60, "supercalifragilisticexpialidocious", "Donaudampfschifffahrtsgesellschaftskapitän",
    "antidisestablishmentarianism", "floccinaucinihilipilification", "hippopotomonstrosesquippedaliophobia",
    "https://example.com/" + "x" * 120, "#" * 120,
    # special tokens written in the text (cut out verbatim, case-sensitive)
    "[CLS]", "[SEP]", "[PAD] [UNK] [MASK]", "hello [SEP] world", "a[SEP]b", "[sep] [Cls]", "[[SEP]]", "[SEP",
    "[MASK][MASK]", "x [UNK]y",
    # code
    "def f(x):\n    return x ** 2  # square", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "SELECT * FROM users WHERE id = 42;", "<!DOCTYPE html><html lang=\"en\"></html>", "{\"key\": [1, 2, null]}",
    "#include <vector>", "$ ls -la | grep .txt > out.log", "x => x * 2", "a != b && c <= d || !e",
]


def make_random_texts(count, seed):
    """Random mixtures of characters from blocks both Unicode tables agree on."""
    rng = random.Random(seed)
    pool = (
        [chr(c) for c in range(0x20, 0x7f)] * 4
        + [chr(c) for c in range(0xa0, 0x180)]
        + [chr(c) for c in range(0x391, 0x3ca)]
        + [chr(c) for c in range(0x410, 0x450)]
        + [chr(c) for c in range(0x4e00, 0x4e80)]
        + [chr(c) for c in range(0x3041, 0x3097)]
        + [chr(c) for c in range(0x1f600, 0x1f640)]
        + list("\t\n\r \u00a0\u2003\u0000\u0007\u200b\u0301\u0308")
    )
    words = ARTICLE.split()
    texts = []
    for i in range(count):
        if i % 2 == 0:
            texts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 60))))
        else:  # prose-like: words with a random character spliced in
            picked = [rng.choice(words) for _ in range(rng.randint(1, 25))]
            j = rng.randrange(len(picked))
            picked[j] = picked[j] + rng.choice(pool) + rng.choice(words)
            texts.append(" ".join(picked))
    return texts


EMBED_TEXTS = [
    "", "hello", "Hello, world!", "The cat sat on the mat.", "A man is playing a guitar.",
    "A woman is slicing an onion.", "How do I reset my password?", "What is the capital of France?",
    "Paris is the capital and most populous city of France.", "Berlin is the capital of Germany.",
    "The stock market fell sharply on Monday after the central bank raised interest rates.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "SELECT name, COUNT(*) FROM orders GROUP BY name HAVING COUNT(*) > 10;",
    "Café au lait, crème brûlée and a croissant, s'il vous plaît.", "Zürich, München und Köln liegen in Europa.",
    "我爱北京天安门。", "東京は日本の首都です。", "Привет, как дела?", "Ελληνική γλώσσα", "I ❤️ pizza 🍕!",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10", "!!! ??? ... ---", "   leading and trailing whitespace   ",
    "tabs\tand\nnewlines\r\nmixed", "ALL CAPS SHOUTING TEXT", "mIxEd CaSe TeXt",
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
    "Machine learning models need large amounts of training data.",
    "Deep neural networks are trained with stochastic gradient descent.",
    "The patient was prescribed 500 mg of amoxicillin twice daily for ten days.",
    "Quarterly revenue grew 12% year over year, driven by cloud services.",
    "The mitochondria is the powerhouse of the cell.", "She sells seashells by the seashore.",
    "In 1969, Apollo 11 landed the first humans on the Moon.", "Water boils at 100 degrees Celsius at sea level.",
    "The court ruled that the contract was void because it lacked consideration.",
    "Add two cups of flour, one egg and a pinch of salt, then whisk until smooth.",
    "hello [SEP] world", WORD, LONG_WORD_101,
] + [" ".join(ARTICLE.split()[:n]) for n in (8, 20, 40, 60, 80, 100, 120, 140)] + [
    ARTICLE * 3,  # over max_seq_length: truncated
]


def check_tables(texts):
    """Asserts that HF's stale Unicode tables and current Unicode agree on every character of the texts."""
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                                       lowercase=False)
    pre = pre_tokenizers.BertPreTokenizer()
    for c in sorted({c for t in texts for c in t}):
        cat = unicodedata.category(c)
        dropped = clean.normalize_str("a" + c + "b") == "ab"
        want_dropped = c in "\0\ufffd" or (cat in ("Cc", "Cf", "Co") and c not in "\t\n\r")
        assert dropped == want_dropped, f"U+{ord(c):04X} ({cat}): tables disagree on cleaning"
        if dropped or c.isspace():
            continue
        cp = ord(c)
        want_punct = cat.startswith("P") or 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
        punct = [w for w, _ in pre.pre_tokenize_str("a" + c + "b")] == ["a", c, "b"]
        assert punct == want_punct, f"U+{cp:04X} ({cat}): tables disagree on punctuation"
        nfd = "".join(d for d in unicodedata.normalize("NFD", c) if unicodedata.category(d) != "Mn")
        assert strip.normalize_str(c) == nfd, f"U+{cp:04X} ({cat}): tables disagree on nonspacing marks"


def write_json(path, obj):
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size} bytes)")


def rounded(vectors):
    return [[round(float(v), 6) for v in row] for row in vectors]


def max_seq_length(model_dir):
    return json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]


def token_fixture():
    texts = TOKEN_TEXTS + make_random_texts(60, seed=1234) + EMBED_TEXTS
    check_tables(texts)
    max_length = max_seq_length(MINILM)
    tok = Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length)  # as sentence-transformers calls it: [CLS] and [SEP] count
    cases = [{"text": t, "ids": tok.encode(t).ids} for t in texts]
    assert len(cases) >= 200
    write_json(FIXTURES / "wordpiece_minilm.json", {
        "model": "all-minilm-l6-v2", "reference": f"tokenizers {tokenizers.__version__}, tokenizer.json",
        "max_length": max_length, "cases": cases})


def embed(model_dir, texts):
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == max_seq_length(model_dir)
    with torch.no_grad():
        return model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)


def embedding_fixture():
    texts = EMBED_TEXTS
    assert len(texts) >= 50
    vectors = embed(MINILM, texts)
    tok = Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    tok.no_truncation()
    assert len(tok.encode(texts[-1]).ids) > max_seq_length(MINILM)
    write_json(FIXTURES / "embeddings_minilm.json", {
        "model": "all-minilm-l6-v2",
        "reference": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
                     "float32 CPU, normalize_embeddings=True",
        "texts": texts, "embeddings": rounded(vectors)})


def tiny_model():
    """A random 2-layer BERT in the file layout of bge-small-en-v1.5's repository (CLS pooling, Normalize, the
    pre-v3 sentence-transformers config files), embedded by sentence-transformers loading that folder."""
    out = FIXTURES / "tiny_bert_cls"
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,!?'-")
    words = ["the", "cat", "sat", "on", "mat", "dog", "ran", "fast", "hello", "world", "emb", "##ed", "##ding",
             "model", "small", "token"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters + ["##" + c for c in letters] + words
    torch.manual_seed(7)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=40, type_vocab_size=2, layer_norm_eps=1e-12)
    model = BertModel(config, add_pooling_layer=False)
    with torch.no_grad():  # larger than the default init, so the layers change the embeddings visibly
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n")
    configs = {
        "tokenizer_config.json": {"do_lower_case": True, "model_max_length": 512, "unk_token": "[UNK]",
                                  "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                                  "mask_token": "[MASK]", "tokenize_chinese_chars": True, "strip_accents": None,
                                  "tokenizer_class": "BertTokenizer"},
        "sentence_bert_config.json": {"max_seq_length": 24, "do_lower_case": True},
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        "1_Pooling/config.json": {"word_embedding_dimension": 32, "pooling_mode_cls_token": True,
                                  "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
                                  "pooling_mode_mean_sqrt_len_tokens": False},
    }
    for name, value in configs.items():
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_text(json.dumps(value, indent=2) + "\n")
    texts = ["", "hello world", "the cat sat on the mat", "Embedding models, small and fast!",
             "the dog ran fast " * 8, "unknown \u0436 symbol", "HELLO WORLD"]
    vectors = embed(out, texts)
    # Committed under a name that does not pass for shipped weights; the test restores it in a temp copy.
    (out / "model.safetensors").rename(out / "model.safetensors.fixture")
    write_json(FIXTURES / "embeddings_tiny_bert_cls.json", {
        "model": "tiny_bert_cls (random, seed 7)",
        "reference": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}",
        "texts": texts, "embeddings": rounded(vectors)})


def main():
    torch.set_num_threads(2)
    token_fixture()
    embedding_fixture()
    tiny_model()


if __name__ == "__main__":
    main()
