// Chain composition, sizing and code printing (see synth.h).
#include "tasks/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tasks/value_class.h"

namespace cuda_agent {
namespace {

// A first input of the given rank at batch 1 for `first`.
Shape propose_shape(const OpDef& first, int rank, Rng& rng) {
  auto pick = [&](std::vector<std::int64_t> v) { return rng.pick(v); };
  if (first.category == "linear") {  // GEMM-sized: rows come from the batch and dim 1
    if (rank == 2) return {1, pick({1024, 2048, 4096, 8192})};
    return rank == 3 ? Shape{1, pick({64, 128, 256, 512}), pick({256, 512, 1024, 2048})}
                     : Shape{1, pick({4, 8, 16}), pick({64, 128, 256}), pick({256, 512, 1024})};
  }
  switch (rank) {
    case 1:
    case 2: return {1, pick({256, 512, 1024, 2048, 4096, 8192, 16384})};
    case 3:
      return {1, pick({16, 32, 64, 128, 256, 512}), pick({64, 128, 256, 512, 1024, 2048, 4096})};
    case 4: {
      const std::int64_t hw = pick({16, 32, 64, 128, 256});
      return {1, pick({3, 8, 16, 32, 64}), hw, rng.chance(0.7) ? hw : pick({16, 32, 64, 128})};
    }
    default: {
      const std::int64_t hw = pick({16, 32, 64});
      return {1, pick({3, 8, 16}), pick({4, 8, 16}), hw, hw};
    }
  }
}

std::string short_op(const std::string& op) {
  std::string s = op;
  if (const auto paren = s.find('('); paren != std::string::npos) s = s.substr(0, paren);
  if (const auto dot = s.rfind('.'); dot != std::string::npos) s = s.substr(dot + 1);
  return s;
}

std::string shape_text(const Shape& s) {
  if (s.empty()) return "a scalar";
  std::string out = "(batch_size";
  for (std::size_t i = 1; i < s.size(); ++i) out += ", " + std::to_string(s[i]);
  return out + ")";
}

std::string tensor_expr(const ExtraInput& in) {
  std::string dims = "batch_size";
  for (std::size_t i = 1; i < in.shape.size(); ++i) dims += ", " + std::to_string(in.shape[i]);
  if (in.factory.rfind("randint:", 0) == 0) {
    return "torch.randint(0, " + in.factory.substr(8) + ", (" + dims +
           (in.shape.size() == 1 ? ",))" : "))");
  }
  return "torch." + in.factory + "(" + dims + ")";
}

std::string render(const std::vector<std::string>& ops, const ChainCode& code, const ExtraInput& x,
                   const Shape& out, std::int64_t batch) {
  std::string chain;
  for (const std::string& op : ops) chain += (chain.empty() ? "" : " -> ") + op;
  std::string params, init_list, forward_params = "x";
  for (const auto& [name, literal] : code.init_args) {
    params += ", " + name;
    init_list += (init_list.empty() ? "" : ", ") + name;
  }
  std::string inputs = tensor_expr(x);
  for (const ExtraInput& in : code.inputs) {
    forward_params += ", " + in.name;
    inputs += ", " + tensor_expr(in);
  }
  std::string src =
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
      "class Model(nn.Module):\n    \"\"\"\n    Synthesized fused-operator task: " +
      chain + ".\n    Input " + shape_text(x.shape) + ", output " + shape_text(out) +
      ".\n    \"\"\"\n\n    def __init__(self" + params +
      "):\n        super(Model, self).__init__()\n";
  for (const std::string& l : code.init_lines) src += "        " + l + "\n";
  src += "\n    def forward(self, " + forward_params + "):\n";
  for (const std::string& l : code.forward_lines) src += "        " + l + "\n";
  src += "        return x\n\n\nbatch_size = " + std::to_string(batch) + "\n";
  for (const auto& [name, literal] : code.init_args) src += name + " = " + literal + "\n";
  src += "\n\ndef get_inputs():\n    return [" + inputs +
         "]\n\n\ndef get_init_inputs():\n    return [" + init_list + "]\n";
  return src;
}

struct Built {
  std::vector<std::string> ops;
  ChainCode code;
  Shape input, output;
  std::vector<Shape> shapes;  // every tensor's shape at batch 1 (for the size limits)
  double per_row_ms = 0, fixed_ms = 0, flops_row = 0, bytes_row = 0, fixed_bytes = 0;
  double peak_row = 0, params = 0;
};

// One attempt at a chain of `length` ops; false when it got stuck.
bool build_chain(const SynthOptions& o, int length, Rng& rng, Built& b) {
  const auto& cat = op_catalogue();
  std::vector<std::size_t> firsts;
  const bool anchored = rng.chance(o.anchor_first);
  for (std::size_t i = 0; i < cat.size(); ++i) {
    if ((!anchored || cat[i].anchor) && !(cat[i].terminal && length > 1)) firsts.push_back(i);
  }
  const OpDef& first = cat[rng.pick(firsts)];
  Shape shape =
      propose_shape(first, static_cast<int>(rng.range(first.min_rank, first.max_rank)), rng);
  b.input = shape;
  b.shapes.push_back(shape);
  ValueClass values;  // randn input: any sign, about unit scale
  for (int step = 0; step < length; ++step) {
    std::vector<std::size_t> fits;
    if (step == 0) {
      fits.push_back(static_cast<std::size_t>(&first - cat.data()));
    } else {
      for (std::size_t i = 0; i < cat.size(); ++i) {
        const int r = static_cast<int>(shape.size());
        if (r < cat[i].min_rank || r > cat[i].max_rank) continue;
        if (cat[i].terminal && step != length - 1) continue;
        if (cat[i].name == b.ops.back()) continue;
        if (degenerate_after(cat[i].name, values)) continue;
        fits.push_back(i);
      }
    }
    bool applied = false;
    for (int tries = 0; tries < 8 && !fits.empty() && !applied; ++tries) {
      const OpDef& op = cat[fits[rng.below(fits.size())]];
      ChainCode code = b.code;
      Shape out;
      OpCost c;
      if (!op.apply(shape, rng, code, out, c)) continue;
      if (numel(out) < 1 || (!out.empty() && out.size() > 5)) continue;
      applied = true;
      b.code = std::move(code);
      b.ops.push_back(op.name);
      values = value_class_after(op.name, values);
      b.flops_row += c.flops_per_row;
      b.bytes_row += c.bytes_per_row;
      b.fixed_bytes += c.fixed_bytes;
      b.peak_row = std::max(b.peak_row, c.peak_bytes_per_row);
      b.params += c.param_bytes;
      shape = out;
      b.shapes.push_back(out.empty() ? Shape{1} : out);
    }
    if (!applied) return false;
  }
  for (const ExtraInput& in : b.code.inputs) b.shapes.push_back(in.shape);
  b.output = shape;
  const double bw = o.hbm_gb_per_s * 1e6;  // bytes per ms
  const double fl = o.fp32_tflops * 1e9;   // flops per ms
  b.per_row_ms = b.bytes_row / bw + b.flops_row / fl;
  b.fixed_ms = b.fixed_bytes / bw + static_cast<double>(length) * o.launch_us / 1000;
  return true;
}

}  // namespace

Expected<std::vector<double>> parse_length_mix(std::string_view text) {
  std::vector<double> w(5, 0.0);
  auto bad = [&](std::string_view part, const char* why) {
    return make_error(ErrorCategory::kInvalidInput, "task.bad_mix",
                      "chain-length mix \"" + std::string(text) + "\": \"" + std::string(part) +
                          "\" " + why + " (expected e.g. \"1:0.1,2:0.6,3:0.2,4:0.05,5:0.05\")");
  };
  std::size_t pos = 0;
  double total = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string part(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (part.find_first_not_of(' ') == std::string::npos) {
      if (comma == text.size()) break;
      return bad(part, "is empty");
    }
    int len = 0;
    double weight = 0;
    char tail = 0;
    if (std::sscanf(part.c_str(), " %d : %lf %c", &len, &weight, &tail) != 2) {
      return bad(part, "is not LENGTH:WEIGHT");
    }
    if (len < 1 || len > 5) return bad(part, "has a length outside 1..5");
    if (!(weight >= 0) || !std::isfinite(weight)) return bad(part, "has a negative weight");
    w[static_cast<std::size_t>(len - 1)] = weight;
    total += weight;
  }
  if (!(total > 0)) return bad(text, "gives every length weight 0");
  return w;
}

Expected<SynthTask> synthesize_one(const SynthOptions& o, std::uint64_t index) {
  Rng rng(splitmix64(splitmix64(o.seed) ^ index));
  // The length is drawn once so that redraws (chains that do not fit) keep the mix.
  const int length = static_cast<int>(rng.weighted(o.length_weights)) + 1;
  for (int attempt = 0; attempt < o.max_attempts; ++attempt) {
    Built b;
    if (!build_chain(o, length, rng, b)) continue;
    const double target = o.target_min_ms * std::pow(o.target_max_ms / o.target_min_ms, rng.unit());
    double largest = 0, inputs = 4.0 * static_cast<double>(numel(b.input));
    for (const Shape& s : b.shapes)
      largest = std::max(largest, 4.0 * static_cast<double>(numel(s)));
    for (const ExtraInput& in : b.code.inputs) inputs += 4.0 * static_cast<double>(numel(in.shape));
    // The batch that meets the target, lowered to what the memory limits allow.
    double batch = std::floor((target - b.fixed_ms) / std::max(b.per_row_ms, 1e-12));
    batch = std::min({batch, std::floor(o.max_tensor_bytes / largest),
                      std::floor((o.max_memory_bytes - b.params) / (inputs + b.peak_row)),
                      double{1 << 24}});
    if (batch >= 64) batch = std::floor(batch / 16) * 16;
    if (batch < 1) continue;
    const double estimate = b.fixed_ms + batch * b.per_row_ms;
    if (estimate < o.accept_min_ms || estimate > o.accept_max_ms) continue;

    SynthTask t;
    t.index = index;
    t.ops = b.ops;
    t.batch = static_cast<std::int64_t>(batch);
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "%05llu", static_cast<unsigned long long>(index));
    t.name = prefix;
    for (const std::string& op : b.ops) t.name += "_" + short_op(op);
    const ExtraInput x{"x", b.input, "randn"};
    t.source = render(b.ops, b.code, x, b.output, t.batch);
    auto with_batch = [&](Shape s) {
      if (!s.empty()) s[0] = t.batch;
      return s;
    };
    t.input_shapes.push_back(with_batch(b.input));
    for (const ExtraInput& in : b.code.inputs) t.input_shapes.push_back(with_batch(in.shape));
    t.output_shape = with_batch(b.output);
    t.estimated_ms = estimate;
    t.flops = b.flops_row * batch;
    t.bytes = b.bytes_row * batch + b.fixed_bytes;
    return t;
  }
  return make_error(ErrorCategory::kInternal, "task.synth_exhausted",
                    "task " + std::to_string(index) + " of seed " + std::to_string(o.seed) +
                        ": no chain fit the size and time limits in " +
                        std::to_string(o.max_attempts) + " attempts");
}

Expected<std::vector<SynthTask>> synthesize(const SynthOptions& o, std::uint64_t first,
                                            std::uint64_t count,
                                            const std::function<void()>& progress) {
  std::vector<SynthTask> out;
  out.reserve(count);
  for (std::uint64_t i = first; i < first + count; ++i) {
    ASSIGN_OR_RETURN(SynthTask t, synthesize_one(o, i));
    out.push_back(std::move(t));
    if (progress) progress();
  }
  return out;
}

}  // namespace cuda_agent
