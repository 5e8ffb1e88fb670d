// Options of task sets (manifest section [tasks]). See core/option_fields.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct TaskOptions {
  static constexpr std::string_view kSection = "tasks";
  static constexpr std::string_view kDoc = "Training and evaluation task sets.";

  std::string train_set = "tasks/sample";
  std::string eval_set;
  double eager_min_ms = 1.0;
  double eager_max_ms = 100.0;
  double decontamination_threshold = 0.9;

  template <class V>
  void visit(V& v) {
    v({.key = "train_set",
       .doc = "Directory of KernelBench-format task files, or a JSON Lines file of Ops-6K rows, "
              "to sample training tasks from."},
      train_set);
    v({.key = "eval_set",
       .doc = "Task set held out for evaluation; training tasks too similar to it are dropped."},
      eval_set);
    v({.key = "eager_min_ms",
       .unit = "ms",
       .doc = "Tasks whose eager time is below this are dropped by the filter.",
       .min = 0.0},
      eager_min_ms);
    v({.key = "eager_max_ms",
       .unit = "ms",
       .doc = "Tasks whose eager time is above this are dropped by the filter.",
       .min = 0.0},
      eager_max_ms);
    v({.key = "decontamination_threshold",
       .doc = "Code-structure similarity to an evaluation task at or above which a training task "
              "is dropped.",
       .min = 0.0,
       .max = 1.0},
      decontamination_threshold);
  }
};

}  // namespace cuda_agent
