#!/usr/bin/env python3
"""Golden decoder fixtures from llama.cpp (through llama-cpp-python), an implementation independent of kvfuse.

Writes tests/fixtures/logits_<preset>.json with two references for a decoder preset (presets.py):
  f32    llama.cpp over an F32 copy of the GGUF whose tensors are the file's weights dequantized by the `gguf`
         package: f32 math over exactly the weights kvfuse dequantizes at load, so a tight reference;
  QUANT  llama.cpp over the original file (q4_1 for SmolLM2, q4_k_m for Qwen2.5-Coder): its matmuls quantize
         activations to 8 bits, so a looser reference.
For five prompts (about 20 to 1000 tokens, one batch each): the top-4 ids and logits at every position and the
statistics of the full logits at the last position; for three chat prompts: 32 greedily decoded ids.

Run it with the reference venv (scripts/setup-reference.sh), e.g. `make reference`, or by hand:
  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_llama_fixtures.py --preset qwen0.5b
"""
import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import gguf
import jinja2.sandbox
import llama_cpp
from llama_cpp_options import extra_bufts
import numpy as np
from presets import PRESETS

REPO = Path(__file__).resolve().parents[2]

TOP_K = 4
N_NEW_TOKENS = 32
END_OF_TURN = b"<|im_end|>"  # ends an assistant turn in the ChatML templates of every preset
# The model's KV cache and context as both references use them: F32 K/V (llama.cpp defaults to F16) so that the
# f32 reference rounds nothing the kvfuse CPU backend keeps in f32.
LLAMA_PARAMS = dict(n_ctx=2048, n_batch=2048, n_ubatch=2048, n_threads=2, n_threads_batch=2, logits_all=True,
                    type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32, flash_attn=False)

SHORT = "The Eiffel Tower was finished in 1889 for the World's Fair in Paris, and today it is"

CHAT_MESSAGES = [
    {"role": "system", "content": "You are a concise assistant for a hardware store. Answer in two or three "
                                  "sentences and mention prices only when asked."},
    {"role": "user", "content": "My kitchen faucet drips even when it is fully closed. What is usually wrong?"},
    {"role": "assistant", "content": "A constant drip almost always means a worn washer or cartridge inside the "
                                     "valve. Shut off the supply valves under the sink, take the handle off and "
                                     "compare the old part with a replacement of the same brand."},
    {"role": "user", "content": "Do I need special tools for that, or will a screwdriver and pliers do?"},
]

CODE = '''import csv
from collections import defaultdict
from dataclasses import dataclass


@dataclass
class Sale:
    region: str
    product: str
    units: int
    price: float


def load_sales(path):
    """Read a CSV export with columns region, product, units, price."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return [Sale(row["region"], row["product"], int(row["units"]), float(row["price"])) for row in reader]


def revenue_by_region(sales):
    totals = defaultdict(float)
    for sale in sales:
        totals[sale.region] += sale.units * sale.price
    return dict(sorted(totals.items(), key=lambda item: item[1], reverse=True))


def best_sellers(sales, top=3):
    units = defaultdict(int)
    for sale in sales:
        units[sale.product] += sale.units
    ranked = sorted(units.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:top]


if __name__ == "__main__":
    sales = load_sales("sales_2023.csv")
    for region, total in revenue_by_region(sales).items():
        print(f"{region:<12} {total:>12,.2f}")
    print("Best sellers:", ", ".join(name for name, _ in best_sellers(sales)))
'''

ARTICLE = """Lighthouses have guided ships along dangerous coasts for more than two thousand years. The most famous \
early example, the Pharos of Alexandria, was built in the third century BC on a small island at the entrance of the \
harbour. Ancient writers describe a tower well over one hundred metres tall, with a fire burning at its summit at \
night and, according to some accounts, a polished bronze mirror that reflected sunlight during the day. The tower \
survived for centuries before a series of earthquakes brought it down, and its stones were later reused to build a \
fortress on the same spot.

For most of history, however, coastal lights were modest affairs: open fires on hilltops, lanterns hung from church \
towers, or braziers of coal kept burning by a keeper who climbed the stairs many times each night. Coal fires were \
bright but smoky, and in bad weather the glass around them quickly turned black with soot. Candles and oil lamps were \
cleaner but much weaker, and a ship could easily mistake a lighthouse for the lights of a town.

The great change came in the early nineteenth century. In 1822 the French physicist Augustin Fresnel presented a new \
kind of lens made of concentric rings of glass prisms. Instead of one thick, heavy lens, Fresnel's design bent the \
light with many thin sections, which meant it could be made very large without becoming impossibly heavy. A single \
lamp placed at the centre of such a lens could be seen more than twenty nautical miles away. Within a few decades \
Fresnel lenses had been installed along the coasts of Europe and North America, and lighthouse authorities began to \
give each light its own pattern of flashes so that sailors could tell them apart.

Keeping a lighthouse was demanding work. Keepers trimmed wicks, polished brass and glass, wound the clockwork that \
turned the lens, and recorded the weather in a logbook. On remote rock stations they might spend weeks without \
seeing anyone apart from their fellow keepers, and supply boats could be delayed for days by storms. Many families \
lived at the stations, and children sometimes rowed to school on the mainland.

Building the towers was often harder than running them. The Eddystone lighthouse off Plymouth had to be built four \
times: the first, a wooden structure finished in 1698, was swept away with its designer inside during the great storm \
of 1703, and the second burned down. John Smeaton's third tower, completed in 1759, used interlocking granite blocks \
and a new kind of lime mortar that set under water, ideas that shaped harbour walls and bridges for the next century.

During the twentieth century electricity, automatic lamp changers and radio beacons made resident keepers \
unnecessary, and most lighthouses were automated by the 1990s. Satellite navigation has since reduced their \
importance further, yet many are still maintained as aids to navigation, and hundreds have been restored as \
museums, guest houses and landmarks that attract visitors from all over the world."""

GUIDE = """# Keeping a sourdough starter healthy

A sourdough starter is a living culture of wild yeast and lactic acid bacteria. It needs flour, water, a stable \
temperature and a regular feeding schedule. This guide explains how to look after one, how to recognise common \
problems, and how to adapt the routine when you bake only once a week.

## 1. What a starter needs

- **Flour.** Whole wheat or rye flour contains more nutrients than white flour and gives a more active culture. Many \
bakers feed with a mix: 80% white bread flour and 20% whole grain.
- **Water.** Tap water is usually fine. If yours smells strongly of chlorine, leave it in an open jug for a few hours \
or use filtered water.
- **Temperature.** Between 24 and 27 °C the yeast is most active and the starter peaks four to six hours after \
feeding. At 20 °C the same starter may need eight to ten hours.
- **Time.** A new starter takes one to two weeks before it can raise a loaf on its own.

## 2. A daily feeding routine

The most common ratio is 1:1:1 by weight: one part starter, one part flour, one part water. For example:

| Step | Amount | Note |
|------|--------|------|
| Keep | 50 g starter | discard or use the rest |
| Add flour | 50 g | mix white and whole grain |
| Add water | 50 g | about 25 °C |
| Wait | 4–6 h | until doubled and domed |

Stir until no dry flour remains, scrape down the sides of the jar, and mark the level with a rubber band so you can \
see how much it rises. A healthy starter doubles in volume, has a domed top covered in bubbles, and smells pleasantly \
sour, a little like yoghurt or green apples.

## 3. Reading the signs

A layer of grey liquid on top, often called *hooch*, means the culture is hungry. Pour it off or stir it back in, \
then feed. A sharp smell of nail-polish remover points the same way: feed more often or use a higher ratio such as \
1:2:2. Pink or orange streaks, on the other hand, are a sign of contamination; throw the starter away and begin \
again with a clean jar.

If the starter rises slowly, check the temperature first. A jar placed near the oven light, or inside a cool box \
with a bottle of warm water, is often enough to bring it back to life within a couple of days.

## 4. Baking once a week

Keeping a starter at room temperature means feeding it every day. If you bake only on weekends, store it in the \
refrigerator instead:

1. Feed the starter, leave it out for one hour, then refrigerate it.
2. Two days before baking, take it out and feed it twice, twelve hours apart.
3. Use it for the levain when it peaks, and return the remainder to the fridge after one more feeding.

A refrigerated starter can go two weeks without food. After longer breaks it may need three or four feedings before \
it is as lively as before.

## 5. Tracking your feedings

Some bakers log every feeding in a notebook; others use a small script. The one below records the time, the ratio \
and the rise, and tells you when the starter peaked:

```python
from datetime import datetime

log = []

def record(ratio, height_mm):
    log.append({"time": datetime.now(), "ratio": ratio, "height_mm": height_mm})

def peak():
    best = max(log, key=lambda entry: entry["height_mm"])
    return best["time"].strftime("%H:%M"), best["height_mm"]
```

## 6. Frequently asked questions

**Can I use a starter straight from the fridge?** You can, but the bread will rise slowly and taste more sour. Two \
feedings at room temperature give a better result.

**Does the jar matter?** Glass lets you see the bubbles and the rise. Avoid tight metal lids that can trap gas.

**How do I share a starter?** Dry a thin layer on baking paper, break it into flakes and keep them in an airtight \
bag. A spoonful of flakes mixed with flour and water will revive in three to five days."""

CONTINUATION_QUESTIONS = [
    ("capital", "What is the capital of France, and what is it famous for?"),
    ("prime", "Write a Python function that checks whether a number is prime."),
    ("sleep", "Give me three tips for sleeping better."),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=PRESETS, default="smollm2", help="the decoder (default: %(default)s)")
    p.add_argument("--model", type=Path, default=None, help="its GGUF (default: where scripts/setup.sh puts it)")
    p.add_argument("--f32-model", type=Path, default=None,
                   help="where the dequantized F32 copy lives; written if missing or older than --model "
                        "(default: beside --model, named in presets.py)")
    p.add_argument("--out", type=Path, default=None,
                   help="fixture file to write (default: tests/fixtures/logits_<preset>.json)")
    args = p.parse_args()
    preset = PRESETS[args.preset]
    args.quant = preset.quant
    args.model = args.model or preset.path
    args.f32_model = args.f32_model or args.model.with_name(preset.f32_copy)
    args.out = args.out or REPO / "tests" / "fixtures" / f"logits_{preset.name}.json"
    if not args.model.exists():
        sys.exit(f"error: --model {args.model}: no such file (scripts/setup.sh {preset.name} fetches it)")
    if args.f32_model == args.model:
        sys.exit("error: --f32-model must differ from --model")
    return args


# --- the F32 copy ------------------------------------------------------------------------------------------------

def field_raw(field):
    """A metadata field's value as the writer takes it, with strings kept as their exact bytes."""
    is_string = field.types[-1] == gguf.GGUFValueType.STRING
    values = [field.parts[i].tobytes() if is_string else field.parts[i][0].item() for i in field.data]
    return values if field.types[0] == gguf.GGUFValueType.ARRAY else values[0]


def metadata_fields(reader):
    """The key-value fields of a GGUF, without the reader's header pseudo-fields."""
    return {name: f for name, f in reader.fields.items() if not name.startswith("GGUF.")}


def copy_metadata(reader, writer):
    for name, field in metadata_fields(reader).items():
        if name == gguf.Keys.General.ARCHITECTURE:
            continue  # the writer adds it first
        if field.types[0] == gguf.GGUFValueType.ARRAY and len(field.types) != 2:
            sys.exit(f"error: {name}: nested arrays are not supported by this copier")
        value = field_raw(field)
        if name == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType.ALL_F32)  # it describes the tensors, which are now all F32
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, value, field.types[0], sub_type=sub_type)


def write_f32_copy(src, dst):
    reader = gguf.GGUFReader(src)
    tmp = dst.with_name(dst.name + ".partial")
    writer = gguf.GGUFWriter(tmp, reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    copy_metadata(reader, writer)
    for t in reader.tensors:
        # numpy shape is GGUF's dimension order reversed; the writer reverses it back, so the shapes are preserved.
        weights = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        writer.add_tensor(t.name, weights.reshape(tuple(reversed(t.shape.tolist()))))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    check_f32_copy(reader, gguf.GGUFReader(tmp))
    tmp.replace(dst)


def check_f32_copy(src, copy):
    """Every key with the same type and bytes (file_type aside), every tensor with the same name and shape."""
    src_fields, copy_fields = metadata_fields(src), metadata_fields(copy)
    # The writer puts general.architecture first, wherever the source has it: the keys, not their order, must match.
    if sorted(src_fields) != sorted(copy_fields):
        sys.exit("error: the F32 copy's metadata keys differ from the source's")
    for name, field in src_fields.items():
        other = copy_fields[name]
        same_value = name == gguf.Keys.General.FILE_TYPE or field_raw(field) == field_raw(other)
        if field.types != other.types or not same_value:
            sys.exit(f"error: the F32 copy's metadata field {name} differs from the source's")
    for a, b in zip(src.tensors, copy.tensors, strict=True):
        if a.name != b.name or a.shape.tolist() != b.shape.tolist() or b.tensor_type != gguf.GGMLQuantizationType.F32:
            sys.exit(f"error: the F32 copy's tensor {b.name} does not match {a.name}")


def ensure_f32_copy(src, dst):
    if dst.exists() and dst.stat().st_mtime > src.stat().st_mtime:
        print(f"F32 copy up to date: {dst}")
        return
    print(f"writing F32 copy {dst} ...", flush=True)
    start = time.time()
    write_f32_copy(src, dst)
    print(f"  {dst.stat().st_size / 2**20:.0f} MiB in {time.time() - start:.0f} s")


# --- prompts -----------------------------------------------------------------------------------------------------

def chat_template(model_path):
    """The model's own template, in the Jinja environment transformers renders chat templates with."""
    source = gguf.GGUFReader(model_path).fields["tokenizer.chat_template"].contents()
    return jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(source)


def render_chat(template, messages):
    return template.render(messages=messages, add_generation_prompt=True)


def logit_prompts(template):
    """(name, text) of the five prompts."""
    chat = render_chat(template, CHAT_MESSAGES)
    return [("short", SHORT), ("chat", chat), ("code", CODE), ("article", ARTICLE), ("guide", GUIDE)]


def continuation_prompts(template):
    """(name, messages, text) of the greedy-decoding prompts: the default system prompt, one user turn."""
    prompts = []
    for name, question in CONTINUATION_QUESTIONS:
        messages = [{"role": "user", "content": question}]
        prompts.append((name, messages, render_chat(template, messages)))
    return prompts


# --- llama.cpp runs ----------------------------------------------------------------------------------------------

def load_llama(path):
    with extra_bufts(False):  # see llama_cpp_options.extra_bufts
        return llama_cpp.Llama(model_path=str(path), verbose=False, **LLAMA_PARAMS)


def all_logits(llm, token_ids):
    """Logits at every position, the whole prompt evaluated as one batch."""
    llm.reset()
    llm.eval(token_ids)
    return np.array(llm.scores[: len(token_ids)], dtype=np.float32)


def top_k_record(logits):
    top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :TOP_K]
    top_logits = np.take_along_axis(logits, top_ids, axis=1)
    last = logits[-1].astype(np.float64)
    return {
        "top_ids": top_ids.tolist(),
        "top_logits": [[round(float(x), 4) for x in row] for row in top_logits],
        "last_stats": {"max": round(float(last.max()), 4), "mean": round(float(last.mean()), 4),
                       "std": round(float(last.std()), 4)},
    }


def greedy(llm, prompt_ids, end_id):
    """Argmax of the raw logits, one token at a time, until N_NEW_TOKENS or end_id (kept in the output).
    Returns the ids and, per step, the margin between the two best logits (how safe a comparison of that id is)."""
    llm.reset()
    llm.eval(prompt_ids)
    generated, margins = [], []
    while len(generated) < N_NEW_TOKENS:
        logits = np.asarray(llm.scores[llm.n_tokens - 1])
        best, second = np.argsort(-logits, kind="stable")[:2]
        generated.append(int(best))
        margins.append(round(float(logits[best] - logits[second]), 4))
        if best == end_id:
            break
        llm.eval([int(best)])
    return generated, margins


def run_reference(path, prompts, continuations, end_id):
    print(f"llama.cpp over {path.name} ...", flush=True)
    start = time.time()
    llm = load_llama(path)
    logit_refs = [top_k_record(all_logits(llm, ids)) for ids in prompts]
    greedy_refs = [greedy(llm, ids, end_id) for ids in continuations]
    print(f"  {time.time() - start:.0f} s")
    return logit_refs, greedy_refs


def tokenize_all(model_path, prompts, continuations):
    """Token ids as llama.cpp makes them, and the id of END_OF_TURN. add_bos=True adds BOS only where the GGUF's
    tokenizer.ggml.add_bos_token says so; the SmolLM2 and Qwen2.5 files say false, so no prompt gets a BOS (chat
    texts start with <|im_start|> themselves)."""
    llm = llama_cpp.Llama(model_path=str(model_path), vocab_only=True, verbose=False)
    prompt_ids = [llm.tokenize(text.encode(), add_bos=True, special=True) for _, text in prompts]
    continuation_ids = [llm.tokenize(text.encode(), add_bos=False, special=True) for _, _, text in continuations]
    end_ids = llm.tokenize(END_OF_TURN, add_bos=False, special=True)
    if len(end_ids) != 1:
        sys.exit(f"error: {model_path}: {END_OF_TURN.decode()} is not one token ({end_ids})")
    return prompt_ids, continuation_ids, end_ids[0]


# --- output ------------------------------------------------------------------------------------------------------

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def compact_json(fixture):
    """One key per line at the top levels, big arrays on a single line each."""
    def dump(value, indent):
        if isinstance(value, dict) and indent <= 8:
            pad = " " * (indent + 2)
            items = [f'{pad}{json.dumps(k)}: {dump(v, indent + 2)}' for k, v in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
        if isinstance(value, list) and value and isinstance(value[0], dict):
            pad = " " * (indent + 2)
            return "[\n" + ",\n".join(pad + dump(v, indent + 2) for v in value) + "\n" + " " * indent + "]"
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return dump(fixture, 0) + "\n"


def build_fixture(model_path, prompts, prompt_ids, logit_refs, continuations, continuation_ids, greedy_refs,
                  end_id):
    return {
        "generator": "tests/reference/make_llama_fixtures.py",
        "llama_cpp_python": llama_cpp.__version__,
        "model_sha256": sha256(model_path),
        "llama_params": {**LLAMA_PARAMS, "type_k": "f32", "type_v": "f32", "use_extra_bufts": False},
        "end_of_turn_id": end_id,
        "prompts": [
            {"name": name, "text": text, "token_ids": ids,
             "refs": {ref: logit_refs[ref][i] for ref in logit_refs}}
            for i, ((name, text), ids) in enumerate(zip(prompts, prompt_ids))
        ],
        "continuations": [
            {"name": name, "messages": messages, "prompt_ids": ids,
             "refs": {ref: greedy_refs[ref][i][0] for ref in greedy_refs},
             "margins": {ref: greedy_refs[ref][i][1] for ref in greedy_refs}}
            for i, ((name, messages, _), ids) in enumerate(zip(continuations, continuation_ids))
        ],
    }


def print_summary(fixture, quant):
    print(f"f32 against {quant}:")
    print(f"{'prompt':<10} {'tokens':>6} {'top-1 agree':>12} {'max |diff| at top-1':>20}")
    for p in fixture["prompts"]:
        f32, q4 = p["refs"]["f32"], p["refs"][quant]
        agree = sum(a[0] == b[0] for a, b in zip(f32["top_ids"], q4["top_ids"]))
        # Each reference's logit at its own top-1 id (the top-1 logit), compared position by position.
        diff = max(abs(a[0] - b[0]) for a, b in zip(f32["top_logits"], q4["top_logits"]))
        n = len(p["token_ids"])
        print(f"{p['name']:<10} {n:>6} {agree:>5}/{n:<5} ({agree / n:4.0%}) {diff:>12.4f}")
    for c in fixture["continuations"]:
        f32, q4 = c["refs"]["f32"], c["refs"][quant]
        common = next((i for i, (a, b) in enumerate(zip(f32, q4)) if a != b), min(len(f32), len(q4)))
        verdict = "identical" if f32 == q4 else f"diverge at token {common}"
        print(f"continuation {c['name']:<8} f32 {len(f32)} ids, {quant} {len(q4)} ids: {verdict:<20} "
              f"smallest f32 top-1/top-2 margin {min(c['margins']['f32']):.4f}")


def main():
    args = parse_args()
    ensure_f32_copy(args.model, args.f32_model)

    template = chat_template(args.model)
    prompts, continuations = logit_prompts(template), continuation_prompts(template)
    prompt_ids, continuation_ids, end_id = tokenize_all(args.model, prompts, continuations)
    logit_refs, greedy_refs = {}, {}
    for ref, path in (("f32", args.f32_model), (args.quant, args.model)):
        logit_refs[ref], greedy_refs[ref] = run_reference(path, prompt_ids, continuation_ids, end_id)

    fixture = build_fixture(args.model, prompts, prompt_ids, logit_refs, continuations, continuation_ids,
                            greedy_refs, end_id)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(compact_json(fixture), encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")
    print_summary(fixture, args.quant)


if __name__ == "__main__":
    main()
