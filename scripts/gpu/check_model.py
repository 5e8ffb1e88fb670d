#!/usr/bin/env python3
r"""Checks our policy network (`cuda-agent-model`, model/transformer.h) against Hugging Face
transformers on the GPU machine (transformers + torch installed there, no network).

For each case it builds a small random model with transformers (from a config, random init; norm
weights perturbed so they matter), saves it with save_pretrained in fp32 and in bf16, then:
  - logits: 32 prompts (1..64 tokens, random ids), HF full forward vs `cuda-agent-model logits`
    (one full forward) and, in fp32, its `--chunk 5` output (the same through our KV cache, 5
    tokens per call); max abs diff <= 1e-4 (fp32) / 2e-2 (bf16). For dynamic RoPE the cached
    reference is HF through its own cache, 5 tokens per call: there the rotation follows the
    length reached so far, so cached and full logits differ past max_position_embeddings in HF
    too (max_abs_diff_hf_chunk5_vs_full records by how much);
  - greedy: HF `generate(do_sample=False, max_new_tokens=16)` per prompt vs
    `cuda-agent-model generate --temperature 0 --max-new-tokens 16` (all 32 through our batched
    engine, 16 decoded together). fp32: identical. bf16: identical, or the first differing token
    is a near tie in HF's own logits (top-2 gap <= 2e-2, the bf16 logits tolerance).
Cases: qwen2 (tied embeddings, q/k/v bias), llama (GQA, llama3 RoPE scaling), qwen3 (QK-norm,
explicit head_dim); and, fp32 only, llama with linear, dynamic (prompts past
max_position_embeddings) and yarn RoPE scaling.
Exits 1 on any failure; writes a JSON summary with --summary.

  scripts/gpu/check_model.py build-gpu/cli/cuda-agent-model --summary $OUT/check_model.json
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

VOCAB = 512
N_PROMPTS = 32
NEW_TOKENS = 16
TOL = {"fp32": 1e-4, "bf16": 2e-2}
V5 = int(transformers.__version__.split(".")[0]) >= 5


def base_kwargs(max_pos=512):
    return dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_pos,
                rms_norm_eps=1e-6, initializer_range=0.03, bos_token_id=None, eos_token_id=None,
                pad_token_id=None)


def make_config(case):
    kw = base_kwargs()
    if case == "qwen2":
        return Qwen2Config(**kw, tie_word_embeddings=True, **rope_kwargs(None, 1e6))
    if case == "qwen3":
        return Qwen3Config(**kw, head_dim=48, tie_word_embeddings=False, **rope_kwargs(None, 1e6))
    rope = {
        "llama": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        "llama_linear": {"rope_type": "linear", "factor": 4.0},
        "llama_dynamic": {"rope_type": "dynamic", "factor": 2.0},
        # factor == max_position_embeddings / original: both transformers conventions agree.
        "llama_yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128},
    }[case]
    if case == "llama_dynamic":
        kw["max_position_embeddings"] = 40
    return LlamaConfig(**kw, **rope_kwargs(rope, 10000.0), tie_word_embeddings=False)


def rope_kwargs(rope, theta):
    """transformers 5.x: rope_parameters (rope_theta inside); 4.x: rope_scaling + rope_theta."""
    if V5:
        return {"rope_parameters": dict(rope or {"rope_type": "default"}, rope_theta=theta)}
    return {"rope_scaling": rope, "rope_theta": theta}


def reset_dynamic_rope(model):
    """transformers' dynamic RoPE keeps the largest length seen; ours is stateless."""
    for m in model.modules():
        if hasattr(m, "original_inv_freq") and hasattr(m, "max_seq_len_cached"):
            m.inv_freq = m.original_inv_freq.to(torch.float32).clone()
            m.max_seq_len_cached = m.original_max_seq_len


def hf_chunked_logits(model, ids, device, chunk=5):
    """HF's forward through its own KV cache, `chunk` tokens per call (as generate would)."""
    reset_dynamic_rope(model)
    pkv, parts = None, []
    for b in range(0, len(ids), chunk):
        out = model(torch.tensor([ids[b:b + chunk]], device=device), past_key_values=pkv,
                    use_cache=True)
        pkv = out.past_key_values
        parts.append(out.logits[0].float().cpu())
    return torch.cat(parts)


def prompts(seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(N_PROMPTS):
        n = 1 + (i * 37) % 64 if i else 1
        out.append(torch.randint(0, VOCAB, (n,), generator=g).tolist())
    return sorted(out, key=len)  # dynamic RoPE in transformers keeps state: growing lengths only


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def check_case(exe, case, dtype, workdir, device):
    torch.manual_seed(1234)
    cfg = make_config(case)
    model = AutoModelForCausalLM.from_config(cfg).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    tdtype = torch.float32 if dtype == "fp32" else torch.bfloat16
    # .to(bf16) would also round the RoPE inverse frequencies (buffers), which transformers keeps
    # in float32 when it loads a bf16 checkpoint; put the float32 ones back.
    saved = {n: m.inv_freq.clone() for n, m in model.named_modules() if hasattr(m, "inv_freq")}
    model = model.to(device=device, dtype=tdtype).eval()
    for n, m in model.named_modules():
        if n in saved:
            m.inv_freq = saved[n].to(device)
            if hasattr(m, "original_inv_freq"):
                m.original_inv_freq = saved[n].to(device)
    d = os.path.join(workdir, f"{case}_{dtype}")
    model.save_pretrained(d)
    ps = prompts(7)
    if case == "llama_dynamic":  # reach past max_position_embeddings (40)
        ps = sorted([p + p[:20] for p in ps], key=len)
    inp = os.path.join(d, "prompts.jsonl")
    with open(inp, "w") as f:
        for p in ps:
            f.write(json.dumps({"ids": p}) + "\n")
    res = {"case": case, "dtype": dtype, "tol": TOL[dtype], "ok": True}
    # Logits.
    with torch.no_grad():
        ref = []
        for p in ps:
            reset_dynamic_rope(model)
            ref.append(model(torch.tensor([p], device=device)).logits[0].float().cpu())
    out = os.path.join(d, "ours.safetensors")
    extra = ["--chunk", "5"] if dtype == "fp32" else []
    run([exe, "logits", d, "--input", inp, "--output", out, "--device", device, "--dtype",
         dtype] + extra)
    ours = load_file(out)
    res["max_abs_logit"] = max(r.abs().max().item() for r in ref)
    ref_cached = ref
    if case == "llama_dynamic" and extra:
        with torch.no_grad():
            ref_cached = [hf_chunked_logits(model, p, device) for p in ps]
        res["max_abs_diff_hf_chunk5_vs_full"] = max(
            (ref_cached[i] - ref[i]).abs().max().item() for i in range(len(ps)))
    for mode, key in [("full", "logits"), ("kv_chunk5", "cached")][:2 if extra else 1]:
        want = ref if key == "logits" else ref_cached
        diff = max((ours[f"{key}.{i}"] - want[i]).abs().max().item() for i in range(len(ps)))
        res[f"max_abs_diff_{mode}"] = diff
        if not diff <= TOL[dtype]:
            res["ok"] = False
    # Greedy generation.
    gen_lines = run([exe, "generate", d, "--input", inp, "--temperature", "0", "--max-new-tokens",
                     str(NEW_TOKENS), "--device", device, "--dtype", dtype, "--json"]).splitlines()
    ours = {j["id"]: j["tokens"] for j in map(json.loads, gen_lines)}
    identical, near_ties, bad = 0, 0, []
    with torch.no_grad():
        for i, p in enumerate(ps):
            x = torch.tensor([p], device=device)
            reset_dynamic_rope(model)
            hf = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False,
                                max_new_tokens=NEW_TOKENS, pad_token_id=0,
                                eos_token_id=None)[0, len(p):].tolist()
            if hf == ours[i]:
                identical += 1
                continue
            k = next(j for j in range(NEW_TOKENS) if hf[j] != ours[i][j])
            reset_dynamic_rope(model)
            logits = model(torch.tensor([p + hf[:k]], device=device)).logits[0, -1].float()
            gap = (logits[hf[k]] - logits[ours[i][k]]).item()
            if dtype == "bf16" and gap <= TOL[dtype]:
                near_ties += 1
            else:
                bad.append({"prompt": i, "at": k, "hf": hf[k], "ours": ours[i][k], "gap": gap})
    res.update(greedy_identical=identical, greedy_near_ties=near_ties, greedy_mismatches=bad[:3])
    if bad:
        res["ok"] = False
    return res


def run_case(job):
    exe, case, dt, work, device = job
    try:
        return check_case(exe, case, dt, work, device)
    except Exception as e:  # report and go on with the other cases
        return {"case": case, "dtype": dt, "ok": False, "error": str(e)[-2000:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe", help="path to cuda-agent-model")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--summary", help="write the results as JSON here")
    args = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, device {args.device}")
    cases = [(c, dt) for c in ("qwen2", "llama", "qwen3") for dt in ("fp32", "bf16")]
    cases += [(c, "fp32") for c in ("llama_linear", "llama_dynamic", "llama_yarn")]
    results = []
    with tempfile.TemporaryDirectory() as work:
        # One process per case (spawned: CUDA does not survive fork), results in case order.
        jobs = [(args.exe, c, dt, work, args.device) for c, dt in cases]
        with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
            for r in pool.imap(run_case, jobs):
                results.append(r)
                print(json.dumps(r), flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
                       "device": args.device, "results": results}, f, indent=1)
    failed = [f"{r['case']}/{r['dtype']}" for r in results if not r["ok"]]
    print("check_model: " + ("all %d cases passed" % len(results) if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
