#!/usr/bin/env bash
# CTest learn_corpus_smoke: the seed-corpus warm-up on the CPU. `cuda-agent-model init --params 1M
# --tokenizer-corpus` makes a ~1M-parameter model whose tokenizer is trained on the corpus; then
# `cuda-agent-learn sft --corpus` trains it for a few steps: the loss falls, the token accuracy is
# printed (with --holdout, on transcripts never trained on too), the held-out line is skipped, a bad line is refused by file and line, the checkpoint
# loads and generates, a second run resumes from it; --corpus with --store, or neither, and a
# --max-tokens every transcript exceeds are refused.
# Usage: learn_corpus_smoke.sh PATH/TO/cuda-agent-model PATH/TO/cuda-agent-learn CORPUS.jsonl
set -euo pipefail
model_exe=$1
learn_exe=$2
corpus=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$model_exe" init "$dir/model" --params 1M --tokenizer-corpus "$corpus" --merges 800 --seed 1 \
  | tee "$dir/init.log"
grep -q "vocab .* (tokenizer fitted to the text given), .* parameters (0\.[89][0-9]M\|1\.[0-2][0-9]M)" \
  "$dir/init.log"

cp "$corpus" "$dir/corpus.jsonl"
echo '{"format":"cuda-agent-corpus","version":1,"task":"bad","system":"","tools":[],"messages":[{"role":"user","content":"x"},{"role":"critic","content":"y"}]}' \
  >> "$dir/corpus.jsonl"
steps=6
"$learn_exe" sft --corpus "$dir/corpus.jsonl" --model "$dir/model" --out "$dir/out" \
  --steps $steps --batch-episodes 2 --lr 3e-3 --checkpoint-every 3 --micro-batch-tokens 2048 \
  --seed 1 \
  > "$dir/sft.log" 2> "$dir/sft.err"
cat "$dir/sft.log"
grep -q "corpus.jsonl:8: messages\[1\]: unknown role \"critic\"" "$dir/sft.err"
grep -q "^data: 6 sequences from .* (split train; 1 of other splits, 1 refused)" "$dir/sft.log"
# The mean loss of the last two steps is well below the first two's.
awk '/^step [0-9]+ sft loss=/ { sub(/^step [0-9]+ sft loss=/, ""); sub(/ .*/, ""); l[n++] = $0 }
     END { if (n < 4) exit 1; a = (l[0] + l[1]) / 2; b = (l[n-1] + l[n-2]) / 2;
           printf "loss: first two steps %.4f, last two %.4f\n", a, b; exit !(b < 0.9 * a) }' \
  "$dir/sft.log"
grep -q "^token accuracy: 0\.[0-9]* (" "$dir/sft.log"

# The checkpoint is a model directory the model commands load.
ckpt=$(ls -d "$dir"/out/step-* | sort | tail -1)
[ "$(basename "$ckpt")" = "step-00000006" ] || { echo "no step-00000006 checkpoint"; exit 1; }
"$model_exe" generate "$ckpt" --prompt "<|im_start|>assistant" --max-new-tokens 8 --json > /dev/null

# A second run resumes from it and trains only the steps it owes.
"$learn_exe" sft --corpus "$dir/corpus.jsonl" --model "$dir/model" --out "$dir/out" \
  --steps $((steps + 1)) --batch-episodes 2 --lr 3e-3 --micro-batch-tokens 2048 --seed 1 \
  > "$dir/resume.log" 2> /dev/null
grep -q "^resumed from .* at step 6" "$dir/resume.log"
[ "$(grep -c '^step [0-9]* sft' "$dir/resume.log")" = 1 ]

# --holdout keeps the last sequences out of training and measures them; openings are reported.
"$learn_exe" sft --corpus "$dir/corpus.jsonl" --model "$dir/model" --out "$dir/held" \
  --steps 1 --batch-episodes 2 --micro-batch-tokens 2048 --seed 1 --holdout 2 \
  > "$dir/held.log" 2> /dev/null
grep -q "^token accuracy: 0\.[0-9]* (.* of 4 sequences); openings 0\.[0-9]*$" "$dir/held.log"
grep -q "^held-out token accuracy: 0\.[0-9]* (.*, 2 sequences never trained on); openings" \
  "$dir/held.log"

# Refusals.
expect_usage() {
  if "$learn_exe" sft "$@" --model "$dir/model" --out "$dir/x" > /dev/null 2> "$dir/err"; then
    echo "accepted: $*"; exit 1
  fi
}
expect_usage --corpus "$corpus" --store "$dir/store" --run r
grep -q "not both" "$dir/err"
expect_usage
grep -q "or --corpus FILE" "$dir/err"
expect_usage --corpus "$corpus" --holdout 6
grep -q "leaves nothing of the 6 sequences" "$dir/err"
expect_usage --store "$dir/store" --run r --holdout 1
grep -q "give --corpus" "$dir/err"
expect_usage --corpus "$corpus" --max-tokens 50
grep -q "tokens, more than the limit of 50 (refused, not truncated" "$dir/err"
grep -q "no transcript to train on" "$dir/err"
echo "learn_corpus_smoke: ok"
