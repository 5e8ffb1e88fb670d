#!/usr/bin/env python3
"""The learner's PPO loss and gradients against an independent implementation (issue 22).

Makes a random fp32 Qwen2-family model (transformers' Qwen2ForCausalLM, saved with
save_pretrained), a batch with stale samples (behaviour != proximal log-probs, some importance
weights past the cap) and a policy that moved (proximal != current: both clip sides active), runs
`learner_ppo_check` on the same safetensors weights, and compares with plain PyTorch: full
log_softmax over the vocabulary, the decoupled PPO formula written here from the paper, autograd.
Targets: loss relative error <= 1e-4, cosine of the whole gradient >= 0.9999 (and per tensor).

  python3 scripts/gpu/check_ppo.py BUILD/learner/learner_ppo_check [--device cuda] [--shape small|0.5b]
"""
import argparse
import json
import math
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import Qwen2Config, Qwen2ForCausalLM


def config(shape):
    if shape == "0.5b":
        return Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                           num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                           max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
                           tie_word_embeddings=True, torch_dtype="float32")
    return Qwen2Config(vocab_size=2000, hidden_size=128, intermediate_size=352, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                       rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                       torch_dtype="float32")


def ppo_loss(logp, prox, beh, adv, clip_low, clip_high, cap, n):
    ratio = torch.exp(logp - prox)
    w = torch.clamp(torch.exp(prox - beh), max=cap)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv
    return (-w * torch.minimum(unclipped, clipped)).sum() / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check_binary")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shape", default="small")
    ap.add_argument("--seqs", type=int, default=4)
    ap.add_argument("--len", type=int, default=96)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = config(args.shape)
    model = Qwen2ForCausalLM(cfg).to(torch.float32)
    with torch.no_grad():  # non-trivial norms and biases
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
            if name.endswith("bias"):
                p.copy_(0.02 * torch.randn_like(p))
    tmp = tempfile.mkdtemp(prefix="check_ppo_")
    model.save_pretrained(tmp, safe_serialization=True)
    model = model.to(args.device)
    clip_low, clip_high, cap = 0.2, 0.28, 2.0
    seqs = []
    with torch.no_grad():
        for s in range(args.seqs):
            ids = torch.randint(0, cfg.vocab_size, (args.len,))
            mask = torch.zeros(args.len, dtype=torch.int64)
            mask[args.len // 4: args.len // 2] = 1  # a model span
            mask[3 * args.len // 4:] = 1            # another, after a "tool" span
            logits = model(ids[None].to(args.device)).logits[0].float()
            cur = torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None].to(args.device))[:, 0].cpu()
            cur = torch.cat([torch.zeros(1), cur])
            prox = cur + 0.3 * torch.randn(args.len)  # the policy moved since: ratios off 1
            beh = prox + 0.8 * torch.randn(args.len)  # stale: some weights past the cap
            adv = torch.randn(args.len)
            seqs.append({"ids": ids.tolist(), "mask": mask.tolist(), "proximal": prox.tolist(),
                         "behaviour": beh.tolist(), "advantages": adv.tolist()})
    batch = {"clip_low": clip_low, "clip_high": clip_high, "importance_cap": cap,
             "temperature": 1.0, "sequences": seqs}
    with open(f"{tmp}/batch.json", "w") as f:
        json.dump(batch, f)
    r = subprocess.run([args.check_binary, tmp, f"{tmp}/batch.json", f"{tmp}/out.safetensors",
                        "--device", args.device], capture_output=True, text=True)
    print(r.stdout.strip(), r.stderr.strip())
    if r.returncode != 0:
        print("FAILED: learner_ppo_check exit", r.returncode)
        return 1
    mine = load_file(f"{tmp}/out.safetensors")

    n = float(sum(sum(s["mask"]) for s in seqs))
    total = 0.0
    model.zero_grad()
    for s in seqs:
        ids = torch.tensor(s["ids"], device=args.device)
        m = torch.tensor(s["mask"], device=args.device)[1:].bool()
        logp_all = torch.log_softmax(model(ids[None]).logits[0].float(), -1)[:-1]
        logp = logp_all.gather(1, ids[1:, None])[:, 0][m]
        t = lambda k: torch.tensor(s[k], device=args.device)[1:][m]
        loss = ppo_loss(logp, t("proximal"), t("behaviour"), t("advantages"), clip_low, clip_high,
                        cap, n)
        loss.backward()
        total += loss.item()
    ref = {}
    for i, layer in enumerate(model.model.layers):
        a = layer.self_attn
        ref[f"layers.{i}.qkv_w"] = torch.cat([a.q_proj.weight.grad, a.k_proj.weight.grad,
                                              a.v_proj.weight.grad])
        ref[f"layers.{i}.qkv_b"] = torch.cat([a.q_proj.bias.grad, a.k_proj.bias.grad,
                                              a.v_proj.bias.grad])
        ref[f"layers.{i}.o_w"] = a.o_proj.weight.grad
        ref[f"layers.{i}.input_norm"] = layer.input_layernorm.weight.grad
        ref[f"layers.{i}.post_norm"] = layer.post_attention_layernorm.weight.grad
        ref[f"layers.{i}.gate_up_w"] = torch.cat([layer.mlp.gate_proj.weight.grad,
                                                  layer.mlp.up_proj.weight.grad])
        ref[f"layers.{i}.down_w"] = layer.mlp.down_proj.weight.grad
    ref["embed"] = model.model.embed_tokens.weight.grad
    ref["final_norm"] = model.model.norm.weight.grad

    loss_rel = abs(mine["loss"].item() - total) / max(abs(total), 1e-12)
    flat_a, flat_b, worst = [], [], (1.0, "")
    for name, g in ref.items():
        mg = mine[f"grad.{name}"].to(args.device)
        if mg.shape != g.shape:
            print(f"FAILED: {name}: shape {tuple(mg.shape)} vs {tuple(g.shape)}")
            return 1
        cos = torch.nn.functional.cosine_similarity(mg.flatten().double(), g.flatten().double(), 0).item()
        worst = min(worst, (cos, name))
        flat_a.append(mg.flatten().double())
        flat_b.append(g.flatten().double())
    cos_all = torch.nn.functional.cosine_similarity(torch.cat(flat_a), torch.cat(flat_b), 0).item()
    missing = [k[5:] for k in mine if k.startswith("grad.") and k[5:] not in ref]
    ok = loss_rel <= 1e-4 and cos_all >= 0.9999 and worst[0] >= 0.9999 and not missing
    print(json.dumps({"shape": args.shape, "device": args.device, "loss_learner": mine["loss"].item(),
                      "loss_reference": total, "loss_rel_error": loss_rel,
                      "grad_cosine": cos_all, "worst_tensor_cosine": worst[0],
                      "worst_tensor": worst[1], "unmatched": missing, "ok": ok}))
    print("check_ppo:", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
