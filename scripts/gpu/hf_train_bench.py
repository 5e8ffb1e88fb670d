#!/usr/bin/env python3
"""The PyTorch eager anchor of the learner's throughput (issue 22): transformers'
Qwen2ForCausalLM in the Qwen2.5-0.5B shape (random weights, no download), bf16, SDPA attention,
fused AdamW, a causal-LM step over --batch x --seq tokens. Prints tokens/s (median step) and peak
GPU memory, without and with gradient checkpointing, one JSON line each.

  python3 scripts/gpu/hf_train_bench.py [--batch 8 --seq 2048 --steps 6 --warmup 2]
"""
import argparse
import json
import statistics
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def qwen05b_config():
    return Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                       num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                       max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                       tie_word_embeddings=True, attn_implementation="sdpa")


def run(recompute, args):
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(qwen05b_config()).to(device="cuda", dtype=torch.bfloat16)
    if recompute:
        model.gradient_checkpointing_enable()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, 151936, (args.batch, args.seq), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    tokens = args.batch * args.seq
    out = {"impl": "transformers", "recompute": recompute, "tokens_per_step": tokens,
           "median_step_s": med, "tokens_per_s": tokens / med,
           "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
           "params": sum(p.numel() for p in model.parameters()),
           "torch": torch.__version__}
    del model, opt
    torch.cuda.empty_cache()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()
    for recompute in (False, True):
        print(json.dumps(run(recompute, args)), flush=True)


if __name__ == "__main__":
    main()
