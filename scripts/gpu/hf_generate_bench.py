#!/usr/bin/env python3
r"""The transformers side of model/generate_bench (issue 8): decode and prefill throughput of
Hugging Face `generate` on the same model shape, dtype and GPU, to be read next to
`generate_bench`'s figures from the same run.

Model: random weights in the shape of Qwen2.5-0.5B (24 layers, hidden 896, 14 heads over 2 KV
heads of 64, SwiGLU 4864, vocab 151936, tied embeddings), bf16 on CUDA, SDPA attention.
Figures (the same definitions as generate_bench.cpp):
  - decode tokens/s at batch 1, 16, 64: B prompts of 128 random tokens, greedy, no EOS;
    decode time = time(generate 128 new tokens) - time(generate 1 new token) (the second is the
    prefill and first token), tokens = B x 127; median of 3 after a warm-up;
  - prefill tokens/s: one 2048-token prompt, one forward (median of 3).

  scripts/gpu/hf_generate_bench.py [--json OUT.json]
"""
import argparse
import json
import statistics
import time

import torch
import transformers
from transformers import AutoModelForCausalLM, Qwen2Config


def timed(fn, reps=3):
    fn()  # warm-up
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--batches", default="1,16,64")
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                      num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                      max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                      pad_token_id=0)
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16,
                                             attn_implementation="sdpa").cuda().eval()
    print("hf_generate_bench: transformers %s, torch %s, %s, Qwen2.5-0.5B shape, bf16, sdpa"
          % (transformers.__version__, torch.__version__, torch.cuda.get_device_name()))
    out = {"transformers": transformers.__version__, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "decode_tokens_per_s": {}}
    gen = torch.Generator(device="cuda").manual_seed(1)

    with torch.no_grad():
        prompt = torch.randint(1, cfg.vocab_size, (1, 2048), device="cuda", generator=gen)
        t = timed(lambda: model(prompt, use_cache=False))
        out["prefill_tokens_per_s"] = 2048 / t
        print("prefill: %.0f tokens/s (2048-token prompt, one forward, median of 3)" % (2048 / t))

        for b in [int(x) for x in a.batches.split(",")]:
            ids = torch.randint(1, cfg.vocab_size, (b, 128), device="cuda", generator=gen)
            mask = torch.ones_like(ids)

            def run(n):
                return lambda: model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                              max_new_tokens=n, min_new_tokens=n,
                                              pad_token_id=0, eos_token_id=None)
            t_full = timed(run(128))
            t_first = timed(run(1))
            decode = max(t_full - t_first, 1e-9)
            tps = b * 127 / decode
            out["decode_tokens_per_s"][str(b)] = tps
            print("decode batch %3d: %8.0f tokens/s (127 steps, %.2f ms/step)"
                  % (b, tps, decode / 127 * 1e3), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
