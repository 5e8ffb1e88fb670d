// Pointwise-chain tasks (see pointwise_chain.h): drawing, the held-out rule, printing.
#include "tasks/pointwise_chain.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tasks/op_cuda.h"
#include "tasks/rng.h"
#include "tasks/value_class.h"

namespace cuda_agent {
namespace {

constexpr std::uint64_t kTrainSalt = 0x7472'6169'6eull;         // "train"
constexpr std::uint64_t kHeldOutSalt = 0x6865'6c64'6f75'74ull;  // "heldout"

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string short_op(const std::string& op) {
  const auto dot = op.rfind('.');
  return dot == std::string::npos ? op : op.substr(dot + 1);
}

const OpDef* catalogue_op(const std::string& name) {
  for (const OpDef& d : op_catalogue())
    if (d.name == name) return &d;
  return nullptr;
}

Status check_options(const PointwiseChainOptions& o) {
  auto bad = [](const std::string& what) {
    return make_error(ErrorCategory::kInvalidInput, "tasks.chain_options", what);
  };
  double total = 0;
  for (double w : o.length_weights) {
    if (!(w >= 0)) return bad("chain length weights must be >= 0");
    total += w;
  }
  if (o.length_weights.empty() || o.length_weights.size() > 3 || !(total > 0))
    return bad("chain length weights: 1 to 3 weights (lengths 1..3), some > 0");
  if (o.heldout_one_in < 2) return bad("heldout_one_in must be at least 2");
  if (o.cols_choices.empty() || o.elements_choices.empty())
    return bad("cols_choices and elements_choices must not be empty");
  for (std::int64_t c : o.cols_choices)
    for (std::int64_t e : o.elements_choices)
      if (c < 1 || e < c) return bad("every element count must be at least every column count");
  return Status::ok();
}

// One draw: a chain of distinct ops whose steps are not degenerate for the values they get.
PointwiseChainTask draw(const PointwiseChainOptions& o, Rng& rng) {
  PointwiseChainTask t;
  const int length = static_cast<int>(rng.weighted(o.length_weights)) + 1;
  t.cols = rng.pick(o.cols_choices);
  t.rows = rng.pick(o.elements_choices) / t.cols;
  const Shape shape{1, t.cols};
  ChainCode code;
  ValueClass values;  // randn input
  std::set<std::string> used;
  for (int step = 0; step < length; ++step) {
    std::vector<const OpDef*> fits;
    for (const std::string& name : op_cuda_ops()) {
      const OpDef* d = catalogue_op(name);
      if (d && !used.count(name) && !degenerate_after(name, values)) fits.push_back(d);
    }
    if (fits.empty()) break;
    const OpDef& op = *fits[rng.below(fits.size())];
    const std::size_t args_before = code.init_args.size(), inputs_before = code.inputs.size();
    Shape out;
    OpCost cost;
    if (!op.apply(shape, rng, code, out, cost) || out != shape) break;
    ChainStep s{.op = op.name};
    if (code.init_args.size() > args_before) {
      s.param_name = code.init_args.back().first;
      s.param = code.init_args.back().second;
    }
    if (code.inputs.size() > inputs_before) s.input = code.inputs.back().name;
    t.steps.push_back(s);
    used.insert(op.name);
    values = value_class_after(op.name, values);
  }
  t.init_args = code.init_args;
  t.inputs.push_back("x");
  for (const ExtraInput& in : code.inputs) t.inputs.push_back(in.name);

  std::string chain, forward_params, init_params, init_list, tensors;
  for (const ChainStep& s : t.steps) chain += (chain.empty() ? "" : " -> ") + s.op;
  for (const std::string& in : t.inputs) {
    forward_params += (forward_params.empty() ? "" : ", ") + in;
    tensors += std::string(tensors.empty() ? "" : ", ") + "torch.randn(batch_size, " +
               std::to_string(t.cols) + ")";
  }
  for (const auto& [name, literal] : code.init_args) {
    init_params += ", " + name;
    init_list += (init_list.empty() ? "" : ", ") + name;
  }
  const std::string dims = "(batch_size, " + std::to_string(t.cols) + ")";
  std::string src =
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
      "class Model(nn.Module):\n    \"\"\"\n    Pointwise-chain task: " +
      chain + ".\n    Input " + dims + ", output " + dims +
      ".\n    \"\"\"\n\n    def __init__(self" + init_params +
      "):\n        super(Model, self).__init__()\n";
  for (const std::string& l : code.init_lines) src += "        " + l + "\n";
  src += "\n    def forward(self, " + forward_params + "):\n";
  for (const std::string& l : code.forward_lines) src += "        " + l + "\n";
  src += "        return x\n\n\nbatch_size = " + std::to_string(t.rows) + "\n";
  for (const auto& [name, literal] : code.init_args) src += name + " = " + literal + "\n";
  src += "\n\ndef get_inputs():\n    return [" + tensors +
         "]\n\n\ndef get_init_inputs():\n    return [" + init_list + "]\n";
  t.source = std::move(src);
  return t;
}

void set_index(PointwiseChainTask& t, std::uint64_t index) {
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "%05llu", static_cast<unsigned long long>(index));
  t.index = index;
  t.name = prefix;
  for (const ChainStep& s : t.steps) t.name += "_" + short_op(s.op);
}

}  // namespace

const char* to_string(ChainSplit split) {
  return split == ChainSplit::kHeldOut ? "heldout" : "train";
}

std::vector<std::string> PointwiseChainTask::ops() const {
  std::vector<std::string> out;
  for (const ChainStep& s : steps) out.push_back(s.op);
  return out;
}

std::string PointwiseChainTask::combination() const { return op_combination(ops()); }

std::string op_combination(std::vector<std::string> ops) {
  std::sort(ops.begin(), ops.end());
  std::string key;
  for (const std::string& op : ops) key += (key.empty() ? "" : "+") + op;
  return key;
}

bool combination_held_out(const PointwiseChainOptions& o, const std::string& combination) {
  return splitmix64(splitmix64(o.seed) ^ fnv1a(combination)) % o.heldout_one_in == 0;
}

Expected<PointwiseChainTask> pointwise_chain_task(const PointwiseChainOptions& o, ChainSplit split,
                                                  std::uint64_t index) {
  RETURN_IF_ERROR(check_options(o));
  const std::uint64_t salt = split == ChainSplit::kHeldOut ? kHeldOutSalt : kTrainSalt;
  Rng rng(splitmix64(splitmix64(o.seed ^ salt) ^ index));
  for (int attempt = 0; attempt < o.max_attempts; ++attempt) {
    PointwiseChainTask t = draw(o, rng);
    if (t.steps.empty()) continue;
    if (combination_held_out(o, t.combination()) != (split == ChainSplit::kHeldOut)) continue;
    t.split = split;
    set_index(t, index);
    return t;
  }
  return make_error(ErrorCategory::kInternal, "tasks.chain_exhausted",
                    std::string(to_string(split)) + " task " + std::to_string(index) + " of seed " +
                        std::to_string(o.seed) + ": no chain of the split in " +
                        std::to_string(o.max_attempts) + " draws");
}

Expected<std::vector<PointwiseChainTask>> distinct_chain_tasks(const PointwiseChainOptions& o,
                                                               ChainSplit split,
                                                               std::uint64_t count) {
  std::vector<PointwiseChainTask> out;
  std::set<std::string> seen;
  for (std::uint64_t draw_index = 0; out.size() < count; ++draw_index) {
    if (draw_index > 64 * (count + 16))
      return make_error(ErrorCategory::kInternal, "tasks.chain_exhausted",
                        "only " + std::to_string(out.size()) + " distinct " + to_string(split) +
                            " combinations in " + std::to_string(draw_index) + " draws");
    ASSIGN_OR_RETURN(PointwiseChainTask t, pointwise_chain_task(o, split, draw_index));
    if (!seen.insert(t.combination()).second) continue;
    set_index(t, out.size());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace cuda_agent
