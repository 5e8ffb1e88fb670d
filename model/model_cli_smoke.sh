#!/usr/bin/env bash
# CTest model_cli_smoke: `cuda-agent-model init --tiny` for each family, then greedy generation
# twice (identical), a seeded sample twice (identical), and logits through the KV cache.
# Usage: model_cli_smoke.sh PATH/TO/cuda-agent-model
set -euo pipefail
exe=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for arch in qwen2 llama qwen3; do
  "$exe" init --tiny "$dir/$arch" --arch "$arch" --seed 3 > /dev/null
  a=$("$exe" generate "$dir/$arch" --prompt "__global__ void" --max-new-tokens 6 --json)
  b=$("$exe" generate "$dir/$arch" --prompt "__global__ void" --max-new-tokens 6 --json)
  [ "$a" = "$b" ] || { echo "greedy differs for $arch: $a / $b"; exit 1; }
  s1=$("$exe" generate "$dir/$arch" --prompt "int i" --temperature 0.9 --top-p 0.95 --seed 5 --json)
  s2=$("$exe" generate "$dir/$arch" --prompt "int i" --temperature 0.9 --top-p 0.95 --seed 5 --json)
  [ "$s1" = "$s2" ] || { echo "seeded sampling differs for $arch"; exit 1; }
  echo '{"text": "for (int j = 0; j < n; ++j)"}' > "$dir/p.jsonl"
  "$exe" logits "$dir/$arch" --input "$dir/p.jsonl" --output "$dir/$arch.safetensors" --chunk 2 \
    > /dev/null 2>&1 && { echo "logits read a text prompt without a tokenizer"; exit 1; }
  echo '{"ids": [5, 6, 7, 8, 9]}' > "$dir/p.jsonl"
  "$exe" logits "$dir/$arch" --input "$dir/p.jsonl" --output "$dir/$arch.safetensors" --chunk 2
  echo "$arch: $a"
done
if "$exe" generate "$dir/none" --prompt x 2> "$dir/err"; then echo "missing model accepted"; exit 1; fi
grep -q "config.json: cannot open" "$dir/err"
echo "model_cli_smoke: ok"
