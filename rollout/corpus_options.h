// Options of the seed corpus warm-up (manifest section [corpus]). See core/option_fields.h.
//
// A model trained from scratch (no checkpoint can be downloaded, or a demonstration that must
// owe nothing to pretraining) first learns the agent's format and a spread of kernel styles from a
// generated corpus of complete transcripts (`cuda-agent tasks corpus`, rollout/seed_corpus.h),
// whose reward tiers are known in advance; RL then has something to improve. With count > 0 and
// [model] path empty, `cuda-agent train` writes the corpus, makes the model with a tokenizer
// trained on it, runs the supervised warm-up, and trains on the corpus's task family: the run's
// train set and evaluation set become <store dir>/../corpus/train-tasks and heldout-tasks
// (tasks whose operator combinations never appear in the corpus).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct CorpusOptions {
  static constexpr std::string_view kSection = "corpus";
  static constexpr std::string_view kDoc =
      "Seed corpus warm-up of a model trained from scratch (used when [model] path is empty).";

  std::int64_t count = 0;
  std::int64_t seed = 1;
  std::string styles;
  std::int64_t train_tasks = 64;
  std::int64_t heldout_tasks = 32;
  std::int64_t sft_steps = 200;
  std::int64_t sft_batch = 16;
  double sft_lr = 1e-3;
  std::int64_t tokenizer_merges = 500;

  template <class V>
  void visit(V& v) {
    v({.key = "count",
       .unit = "transcripts",
       .doc = "Transcripts in the corpus; 0: no corpus warm-up (the run starts from [model] path "
              "or a tiny random model). With count > 0 the run trains on the corpus's task "
              "family and [tasks] train_set and eval_set are not used.",
       .min = 0},
      count);
    v({.key = "seed",
       .doc = "The corpus and its task sets depend only on this and count.",
       .min = 0},
      seed);
    v({.key = "styles",
       .doc = "Kernel styles of the corpus: cpu (half do not build), gpu, or weights, as "
              "`cuda-agent tasks corpus --mix` "
              "takes them; empty: the generator's default mix."},
      styles);
    v({.key = "train_tasks",
       .unit = "tasks",
       .doc = "RL training tasks written beside the corpus (its operator combinations).",
       .min = 1},
      train_tasks);
    v({.key = "heldout_tasks",
       .unit = "tasks",
       .doc = "Held-out tasks whose operator combinations appear neither in the corpus nor in "
              "the training tasks; the run's evaluation set.",
       .min = 1},
      heldout_tasks);
    v({.key = "sft_steps",
       .unit = "steps",
       .doc = "Supervised warm-up steps on the corpus before RL.",
       .min = 1},
      sft_steps);
    v({.key = "sft_batch",
       .unit = "transcripts",
       .doc = "Transcripts per supervised step.",
       .min = 1},
      sft_batch);
    v({.key = "sft_lr", .doc = "Supervised warm-up learning rate (AdamW).", .min = 0.0}, sft_lr);
    v({.key = "tokenizer_merges",
       .unit = "merges",
       .doc = "BPE merges of the tokenizer trained on the corpus. With 500 an operator's name "
              "is spelled in pieces; from about 2000 on every word of the corpus is one token "
              "(the vocabulary stops growing near 2,100), the transcripts are a fifth shorter, and "
              "copying a name from the task is copying one token.",
       .min = 1,
       .max = 100000},
      tokenizer_merges);
  }
};

}  // namespace cuda_agent
