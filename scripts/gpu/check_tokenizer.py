#!/usr/bin/env python3
r"""Checks that `cuda-agent model tokenize` gives the same ids as Hugging Face `tokenizers`.

Needs the Python `tokenizers` package (the GPU machines have it) and no network: it trains small
byte-level BPE tokenizers locally in the Qwen2, Qwen3, Llama-3 and GPT-2 layouts (their pre-tokenizer
regexes, normalizers, special and added tokens, Llama-3's ignore_merges and BOS template), saves
each as tokenizer.json (plus the tiny one `cuda-agent model init-tokenizer` writes, which HF
must load), generates >= 10,000 test strings per tokenizer (unicode, CJK, emoji,
whitespace runs, code, numbers, contractions, special tokens inline, NFD text, case-folding
corner cases), encodes them with both and compares the ids; then decodes HF's ids with both and
compares the text. Prints a summary and exits 1 on any mismatch, listing the first few.

  scripts/gpu/check_tokenizer.py build/cli/cuda-agent
  # split across machines: HF side where `tokenizers` is, ours where cuda-agent runs
  scripts/gpu/check_tokenizer.py --export cases/          # writes tokenizers + expected ids
  scripts/gpu/check_tokenizer.py build/cli/cuda-agent --expected cases/

Known difference: PCRE2 10.42 (Debian 12) has Unicode 14 tables, utf8proc 2.8 Unicode 15.0; the
Oniguruma inside tokenizers 0.23 has Unicode 16. model/pcre_regex.cpp adds utf8proc's newer
letters and numbers and a few later blocks (CJK extension I; Egyptian hieroglyphs extended-A, Ol
Onal, Kirat Rai digits) to \p{L} and \p{N}; other scripts new in 16.0 (Garay, Sunuwar, ...) are
letters there and unassigned here, so random code points can still hit a difference.
Seen 2026-12-02 with tokenizers 0.23.2: 84,000 strings over 8 tokenizers (qwen2, qwen3, llama3,
strip, gpt2, gpt2_prefix, and the tiny one twice), 0 mismatches; before Ol Onal and Kirat Rai were
added, 2 strings (next to U+1E5F0 and U+16D70) differed. HF loads the tiny tokenizer.json of
`cuda-agent model init-tokenizer`.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import zlib

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN25_ADDED = ["<tool_call>", "</tool_call>"]
QWEN3_ADDED = QWEN25_ADDED + ["<tool_response>", "</tool_response>", "<think>", "</think>"]
LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>"]

WORDS = ("the kernel reads every element once so it is bound by memory bandwidth we use float4 "
         "loads grid stride loop shared memory warp shuffle reduction softmax matmul tensor core "
         "occupancy registers spill latency throughput benchmark verify compile profile").split()
CODE = [
    "__global__ void k(const float* __restrict__ x, float* y, int n) {\n",
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n", "  if (i < n) y[i] = fmaxf(x[i], 0.f);\n",
    "}\n", "def forward(self, x):\n", "    return torch.relu(self.linear(x)) * 2.0\n",
    "for (int j = 0; j < 16; ++j) acc += a[j] * b[j];", "#include <cuda_runtime.h>\n",
    "x<<<blocks, threads, 0, stream>>>(p);", "if a != b and c >= d: pass", "a->b::c", "`code`",
    "{\"name\": \"compile\", \"arguments\": {\"path\": \"k.cu\"}}", "// comment\n", "/* block */",
    "\tindented\twith\ttabs", "std::vector<int> v{1, 2, 3};", "0x7fffffff", "1e-5", "3.14159",
]
UNICODE = [
    "café", "cafe\u0301", "naïve", "Ångström", "A\u030angstro\u0308m", "über", "São Paulo",
    "你好，世界！", "矩阵乘法和归约", "こんにちは世界", "カーネル", "안녕하세요", "한국어",
    "Привет, мир", "Ядро работает", "مرحبا بالعالم", "नमस्ते दुनिया", "ภาษาไทย", "Γειά σου κόσμε",
    "🚀", "✅❌", "👍🏽", "👩‍💻", "🇫🇷🇯🇵", "😀😃😄", "🎉", "∑∫√∞≠≤≥", "αβγδλμσπ", "—–…“”‘’•",
    "\u00a0", "\u3000", "\u2028", "\u2029", "\u0085", "\u200b", "\u200d", "\ufeff", "\u00ad",
    "ſ", "K", "'S", "'ſ", "ß", "İ", "ﬁ", "Ⅻ", "①", "٣", "𝟘𝟙", "𝔘𝔫𝔦", "\U0001F9D1\u200d\U0001F680",
    "\x00", "\x01", "\x7f", "\x1b[0m", "\r", "\r\n",
]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ll", "don't",
                "We'll", "they'd've", "it's", "O'Neil", "rock 'n' roll", "''", "'"]
WHITESPACE = [" ", "  ", "   ", "    ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n ", "\t \t",
              "        ", " " * 17, "\n" * 7, " \u00a0 ", "\u3000\u3000"]


def random_codepoint(rng):
    while True:
        plane = rng.choice([0x7F, 0x7FF, 0xFFFF, 0x10FFFF])
        c = rng.randint(0, plane)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def make_strings(n, specials, seed):
    rng = random.Random(seed)
    tokens = specials + ["<|im_sta", "<tool_", "</", "<|", "|>", "<think", "</think"]
    out = []
    for i in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            kind = rng.random()
            if kind < 0.22:
                parts.append(rng.choice(WORDS) + rng.choice(["", " ", ",", ".", "\n", "!"]))
            elif kind < 0.40:
                parts.append(rng.choice(CODE))
            elif kind < 0.55:
                parts.append(rng.choice(UNICODE))
            elif kind < 0.63:
                parts.append(rng.choice(CONTRACTIONS))
            elif kind < 0.75:
                parts.append(rng.choice(WHITESPACE))
            elif kind < 0.82:
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 15))))
            elif kind < 0.90:
                parts.append(rng.choice(tokens))
            else:
                parts.append("".join(random_codepoint(rng) for _ in range(rng.randint(1, 6))))
        s = "".join(parts)
        if i % 50 == 0:
            s = " " * rng.randint(1, 40) + s + " " * rng.randint(0, 5)
        out.append(s)
    out[:6] = ["", " ", "\n\n\n", "   x", "a" * 5000, " " * 3000 + "b"]
    return out


def build_tokenizers(workdir, corpus):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers

    def byte_level_bpe(pattern, nfc, special, added, ignore_merges, bos=None, strip_tokens=False,
                       prefix_space=False):
        kwargs = {"ignore_merges": True} if ignore_merges else {}
        tok = Tokenizer(models.BPE(**kwargs))
        if nfc:
            tok.normalizer = normalizers.NFC()
        if pattern is None:  # GPT-2 style: ByteLevel alone, with its own regex
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space,
                                                         use_regex=True)
        else:
            tok.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=3000, min_frequency=2, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      special_tokens=[])
        tok.train_from_iterator(corpus, trainer)
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
        if strip_tokens:
            tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True,
                                               special=True, normalized=False)])
            tok.add_tokens([AddedToken("word", single_word=True, normalized=False),
                            AddedToken("<norm>", normalized=True, special=False)])
        if bos:
            bos_id = tok.token_to_id(bos)
            tok.post_processor = processors.Sequence([
                processors.ByteLevel(trim_offsets=False),
                processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                              special_tokens=[(bos, bos_id)])])
        else:
            tok.post_processor = processors.ByteLevel(trim_offsets=False)
        return tok

    specs = {
        "qwen2": dict(pattern=QWEN2_PATTERN, nfc=True, special=QWEN_SPECIAL, added=QWEN25_ADDED,
                      ignore_merges=False),
        "qwen3": dict(pattern=QWEN2_PATTERN, nfc=True, special=QWEN_SPECIAL, added=QWEN3_ADDED,
                      ignore_merges=False),
        "llama3": dict(pattern=LLAMA3_PATTERN, nfc=False, special=LLAMA3_SPECIAL, added=[],
                       ignore_merges=True, bos="<|begin_of_text|>"),
        "strip": dict(pattern=QWEN2_PATTERN, nfc=True, special=QWEN_SPECIAL, added=[],
                      ignore_merges=False, strip_tokens=True),
        "gpt2": dict(pattern=None, nfc=False, special=["<|endoftext|>"], added=[],
                     ignore_merges=False),
        "gpt2_prefix": dict(pattern=None, nfc=False, special=["<|endoftext|>"], added=[],
                            ignore_merges=False, prefix_space=True),
    }
    built = {}
    for name, spec in specs.items():
        tok = byte_level_bpe(**spec)
        d = os.path.join(workdir, name)
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"))
        extra = ["<mask>", "word", "<norm>"] if spec.get("strip_tokens") else []
        built[name] = (tok, d, spec["special"] + spec["added"] + extra)
    return built


def run_ours(binary, tok_dir, lines, flags):
    proc = subprocess.run([binary, "model", "tokenize", tok_dir] + flags,
                          input="".join(lines).encode(), capture_output=True, check=False)
    # Not splitlines(): it also splits at U+0085, U+2028 and friends inside the JSON text.
    out = [json.loads(l) for l in proc.stdout.decode().split("\n") if l]
    if len(out) != len(lines):
        sys.exit(f"cuda-agent gave {len(out)} lines for {len(lines)} (rc {proc.returncode}): "
                 f"{proc.stderr.decode()[-2000:]}")
    return out


def export_cases(args):
    import tokenizers
    corpus = make_strings(4000, [], seed=1)
    built = build_tokenizers(args.export, corpus)
    if args.tiny:
        # Ours, from `cuda-agent model init-tokenizer`: HF must load it and agree with us.
        from tokenizers import Tokenizer
        d = os.path.join(args.export, "tiny")
        os.makedirs(d, exist_ok=True)
        with open(args.tiny, "rb") as src, open(os.path.join(d, "tokenizer.json"), "wb") as dst:
            dst.write(src.read())
        built["tiny"] = (Tokenizer.from_file(os.path.join(d, "tokenizer.json")), d,
                         QWEN_SPECIAL + QWEN3_ADDED)
    manifest = {"tokenizers_version": tokenizers.__version__, "cases": {}}
    for name, (tok, d, specials) in built.items():
        strings = make_strings(args.strings, specials, seed=zlib.crc32(name.encode()))
        cases = []
        for s in strings:
            ids = tok.encode(s, add_special_tokens=False).ids
            ids_special = tok.encode(s, add_special_tokens=True).ids
            cases.append({"text": s, "ids": ids, "ids_special": ids_special,
                          "decoded": tok.decode(ids, skip_special_tokens=False)})
        with open(os.path.join(d, "cases.jsonl"), "w") as f:
            for c in cases:
                f.write(json.dumps(c) + "\n")
        manifest["cases"][name] = len(cases)
    with open(os.path.join(args.export, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    print(f"exported {manifest}")


def compare(binary, name, tok_dir, cases, show):
    texts = [json.dumps({"text": c["text"]}) + "\n" for c in cases]
    failures = []
    for flag, key in (([], "ids"), (["--add-special-tokens"], "ids_special")):
        ours = run_ours(binary, tok_dir, texts, ["--jsonl"] + flag)
        for c, o in zip(cases, ours):
            if o.get("ids") != c[key]:
                failures.append(("encode" + (" +special" if flag else ""), c, c[key], o))
    decoded = run_ours(binary, tok_dir, [json.dumps({"ids": c["ids"]}) + "\n" for c in cases],
                       ["--decode"])
    for c, o in zip(cases, decoded):
        if o.get("text") != c["decoded"]:
            failures.append(("decode", c, c["decoded"], o))
    print(f"{name}: {len(cases)} strings, {len(failures)} mismatches")
    for what, c, want, got in failures[:show]:
        print(f"  {what}: text={c['text'][:200]!r}\n    hf  ={str(want)[:300]}\n    ours={str(got)[:300]}")
    return len(failures)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cuda_agent", nargs="?", help="path of the cuda-agent binary")
    ap.add_argument("--strings", type=int, default=10500, help="test strings per tokenizer")
    ap.add_argument("--export", help="only build tokenizers and HF's answers into this folder")
    ap.add_argument("--expected", help="compare against a folder written by --export")
    ap.add_argument("--tiny", help="with --export: also a tokenizer.json written by "
                    "`cuda-agent model init-tokenizer` (done by itself without --export)")
    ap.add_argument("--show", type=int, default=5, help="mismatches to list per tokenizer")
    args = ap.parse_args()
    if args.export:
        return export_cases(args)
    if not args.cuda_agent:
        ap.error("the path of the cuda-agent binary is required")
    folder = args.expected
    if not folder:
        folder = tempfile.mkdtemp(prefix="check_tokenizer_")
        args.export = folder
        tiny_dir = os.path.join(folder, "tiny-init")
        subprocess.run([args.cuda_agent, "model", "init-tokenizer", tiny_dir], check=True,
                       stdout=subprocess.DEVNULL)
        args.tiny = os.path.join(tiny_dir, "tokenizer.json")
        export_cases(args)
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    total = 0
    mismatches = 0
    for name in manifest["cases"]:
        d = os.path.join(folder, name)
        with open(os.path.join(d, "cases.jsonl")) as f:
            cases = [json.loads(l) for l in f.read().split("\n") if l]
        total += len(cases)
        mismatches += compare(args.cuda_agent, name, d, cases, args.show)
    print(f"summary: tokenizers {manifest['tokenizers_version']}, {total} strings over "
          f"{len(manifest['cases'])} tokenizers, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
