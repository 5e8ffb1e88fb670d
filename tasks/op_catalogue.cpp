// Elementwise, activation, reduction, softmax, indexing/reshaping and loss operators of the
// synthesizer's catalogue (see op_catalogue.h); module-based ones are in op_catalogue_nn.cpp.
#include "tasks/op_catalogue.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cuda_agent {
namespace {

constexpr double kF = 4;  // bytes per float32 element

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

// Per-row cost of reading `reads` tensors of `in`'s size and writing one of `out`'s.
OpCost stream_cost(const Shape& in, const Shape& out, double flops_per_elem, int reads = 1) {
  const double a = static_cast<double>(numel(in)), b = static_cast<double>(numel(out));
  return {.flops_per_row = flops_per_elem * a,
          .bytes_per_row = kF * (reads * a + b),
          .peak_bytes_per_row = kF * (reads * a + b)};
}

// A random non-batch dim whose size is at least `min_size`; -1 if there is none.
int pick_dim(const Shape& in, Rng& rng, std::int64_t min_size = 2) {
  std::vector<int> dims;
  for (int d = 1; d < static_cast<int>(in.size()); ++d) {
    if (in[static_cast<std::size_t>(d)] >= min_size) dims.push_back(d);
  }
  return dims.empty() ? -1 : rng.pick(dims);
}

struct Unary {
  const char* name;
  const char* category;
  const char* expr;                  // X is the input; A the optional argument
  double flops;                      // per element
  const char* arg;                   // argument name, or nullptr
  std::vector<std::string> choices;  // its values (Python literals)
};

void add_unary(std::vector<OpDef>& ops, const Unary& u) {
  ops.push_back(
      {.name = u.name,
       .category = u.category,
       .min_rank = 1,
       .max_rank = 5,
       .apply = [u](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
         std::string e = replace_all(u.expr, "X", "x");
         if (u.arg) e = replace_all(e, "A", code.attr(u.arg, rng.pick(u.choices)));
         code.line("x = " + e);
         out = in;
         cost = stream_cost(in, out, u.flops);
         return true;
       }});
}

// Reductions over one non-batch dim: REDUCE(x, dim=D, keepdim=K).
void add_reduction(std::vector<OpDef>& ops, const char* name, const char* expr, double flops,
                   bool keepdim_arg) {
  const std::string e = expr;
  ops.push_back({.name = name,
                 .category = "reduction",
                 .min_rank = 2,
                 .max_rank = 5,
                 .apply = [e, flops, keepdim_arg](const Shape& in, Rng& rng, ChainCode& code,
                                                  Shape& out, OpCost& cost) {
                   const int d = pick_dim(in, rng);
                   if (d < 0) return false;
                   const bool keep = keepdim_arg && rng.chance(0.5);
                   std::string s = replace_all(e, "X", "x");
                   s = replace_all(s, "D", std::to_string(d));
                   s = replace_all(s, "K", keep ? "True" : "False");
                   code.line("x = " + s);
                   out = in;
                   if (keep) {
                     out[static_cast<std::size_t>(d)] = 1;
                   } else {
                     out.erase(out.begin() + d);
                   }
                   cost = stream_cost(in, out, flops);
                   return true;
                 }});
}

// Along one dim, shape unchanged: softmax family, cumulative ops, flip, roll.
void add_along_dim(std::vector<OpDef>& ops, const char* name, const char* category,
                   const char* expr, double flops) {
  const std::string e = expr;
  ops.push_back(
      {.name = name,
       .category = category,
       .min_rank = 2,
       .max_rank = 5,
       .apply = [e, flops](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
         const int d = pick_dim(in, rng);
         if (d < 0) return false;
         const std::string s = replace_all(replace_all(e, "X", "x"), "D", std::to_string(d));
         code.line("x = " + s);
         out = in;
         cost = stream_cost(in, out, flops);
         return true;
       }});
}

// x OP other, with `other` an extra input of x's shape.
void add_binary_input(std::vector<OpDef>& ops, const char* name, const char* expr,
                      const char* factory) {
  const std::string e = expr, f = factory;
  ops.push_back({.name = name,
                 .category = "elementwise",
                 .min_rank = 1,
                 .max_rank = 5,
                 .apply = [e, f](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
                   const std::string y = code.input("y", in, f);
                   code.line("x = " + replace_all(replace_all(e, "X", "x"), "Y", y));
                   out = in;
                   cost = stream_cost(in, out, 1, 2);
                   return true;
                 }});
}

// A loss against a target input: the output is a scalar, so it ends a chain.
void add_loss(std::vector<OpDef>& ops, const char* name, const char* expr, const char* factory,
              int min_rank, int max_rank) {
  const std::string e = expr, f = factory;
  ops.push_back({.name = name,
                 .category = "loss",
                 .min_rank = min_rank,
                 .max_rank = max_rank,
                 .terminal = true,
                 .apply = [e, f](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
                   Shape target = in;
                   std::string factory = f;
                   if (f == "class") {  // class indices along dim 1
                     if (in.size() != 2 || in[1] < 2) return false;
                     target = {in[0]};
                     factory = "randint:" + std::to_string(in[1]);
                   }
                   const std::string y = code.input("target", target, factory);
                   code.line("x = " + replace_all(replace_all(e, "X", "x"), "Y", y));
                   out = {};
                   cost = stream_cost(in, {1}, 4, 2);
                   return true;
                 }});
}

void add_reshapes(std::vector<OpDef>& ops);

}  // namespace

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  return n;
}

std::string tuple_literal(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string float_literal(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  for (int prec = 1; prec < 17; ++prec) {  // the shortest that reads back the same
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

void add_pointwise_ops(std::vector<OpDef>& ops) {
  const std::vector<Unary> unary = {
      {"torch.relu", "activation", "torch.relu(X)", 1, nullptr, {}},
      {"torch.sigmoid", "activation", "torch.sigmoid(X)", 4, nullptr, {}},
      {"torch.tanh", "activation", "torch.tanh(X)", 4, nullptr, {}},
      {"F.gelu", "activation", "F.gelu(X)", 8, nullptr, {}},
      {"F.silu", "activation", "F.silu(X)", 5, nullptr, {}},
      {"F.mish", "activation", "F.mish(X)", 10, nullptr, {}},
      {"F.elu", "activation", "F.elu(X, alpha=A)", 4, "alpha", {"1.0", "0.5"}},
      {"F.selu", "activation", "F.selu(X)", 4, nullptr, {}},
      {"F.celu", "activation", "F.celu(X, alpha=A)", 4, "alpha", {"1.0", "2.0"}},
      {"F.softplus", "activation", "F.softplus(X, beta=A)", 6, "beta", {"1.0", "2.0"}},
      {"F.softsign", "activation", "F.softsign(X)", 3, nullptr, {}},
      {"F.hardswish", "activation", "F.hardswish(X)", 4, nullptr, {}},
      {"F.hardsigmoid", "activation", "F.hardsigmoid(X)", 3, nullptr, {}},
      {"F.hardtanh",
       "activation",
       "F.hardtanh(X, min_val=-A, max_val=A)",
       2,
       "hardtanh_bound",
       {"1.0", "2.0", "0.5"}},
      {"F.relu6", "activation", "F.relu6(X)", 2, nullptr, {}},
      {"F.leaky_relu",
       "activation",
       "F.leaky_relu(X, negative_slope=A)",
       2,
       "negative_slope",
       {"0.01", "0.1", "0.2"}},
      {"F.logsigmoid", "activation", "F.logsigmoid(X)", 6, nullptr, {}},
      {"F.tanhshrink", "activation", "F.tanhshrink(X)", 5, nullptr, {}},
      {"F.softshrink", "activation", "F.softshrink(X, lambd=A)", 2, "lambd", {"0.5", "0.25"}},
      {"F.hardshrink", "activation", "F.hardshrink(X, lambd=A)", 2, "lambd", {"0.5", "0.25"}},
      {"torch.abs", "elementwise", "torch.abs(X)", 1, nullptr, {}},
      {"torch.exp",
       "elementwise",
       "torch.exp(torch.clamp(X, max=A))",
       4,
       "exp_clamp",
       {"10.0", "20.0"}},
      {"torch.neg", "elementwise", "torch.neg(X)", 1, nullptr, {}},
      {"torch.square", "elementwise", "torch.square(X)", 1, nullptr, {}},
      {"torch.sin", "elementwise", "torch.sin(X)", 8, nullptr, {}},
      {"torch.cos", "elementwise", "torch.cos(X)", 8, nullptr, {}},
      {"torch.erf", "elementwise", "torch.erf(X)", 8, nullptr, {}},
      {"torch.sqrt",
       "elementwise",
       "torch.sqrt(torch.abs(X) + A)",
       4,
       "sqrt_eps",
       {"1e-06", "1.0"}},
      {"torch.log", "elementwise", "torch.log(torch.abs(X) + A)", 8, "log_eps", {"1e-06", "1.0"}},
      {"torch.rsqrt",
       "elementwise",
       "torch.rsqrt(torch.abs(X) + A)",
       4,
       "rsqrt_eps",
       {"1e-03", "1.0"}},
      {"torch.clamp",
       "elementwise",
       "torch.clamp(X, min=-A, max=A)",
       2,
       "clamp_bound",
       {"0.5", "1.0", "3.0"}},
      {"torch.clamp_min", "elementwise", "torch.clamp_min(X, A)", 1, "clamp_min", {"0.0", "-0.5"}},
      {"torch.round", "elementwise", "torch.round(X * A) / A", 2, "round_scale", {"4.0", "16.0"}},
      {"torch.pow", "elementwise", "torch.pow(X, A)", 4, "exponent", {"2", "3"}},
      {"operator.mul", "elementwise", "X * A", 1, "scale_factor", {"0.5", "2.0", "1.5"}},
      {"operator.add", "elementwise", "X + A", 1, "add_value", {"0.5", "1.0", "-0.1"}},
      {"operator.sub", "elementwise", "X - A", 1, "subtract_value", {"0.5", "0.25"}},
      {"operator.truediv", "elementwise", "X / A", 1, "divisor", {"2.0", "3.0", "0.5"}},
      {"torch.where",
       "elementwise",
       "torch.where(X > 0, X, X * A)",
       2,
       "negative_scale",
       {"0.1", "0.5"}},
      {"torch.lerp",
       "elementwise",
       "torch.lerp(X, torch.tanh(X), A)",
       6,
       "weight",
       {"0.25", "0.5"}},
  };
  for (const Unary& u : unary) add_unary(ops, u);

  add_binary_input(ops, "torch.add", "torch.add(X, Y)", "randn");
  add_binary_input(ops, "torch.mul", "torch.mul(X, Y)", "randn");
  add_binary_input(ops, "torch.maximum", "torch.maximum(X, Y)", "randn");
  add_binary_input(ops, "torch.minimum", "torch.minimum(X, Y)", "randn");

  add_reduction(ops, "torch.sum", "torch.sum(X, dim=D, keepdim=K)", 1, true);
  add_reduction(ops, "torch.mean", "torch.mean(X, dim=D, keepdim=K)", 1, true);
  add_reduction(ops, "torch.amax", "torch.amax(X, dim=D, keepdim=K)", 1, true);
  add_reduction(ops, "torch.amin", "torch.amin(X, dim=D, keepdim=K)", 1, true);
  add_reduction(ops, "torch.max", "torch.max(X, dim=D, keepdim=K)[0]", 1, true);
  add_reduction(ops, "torch.min", "torch.min(X, dim=D, keepdim=K)[0]", 1, true);
  add_reduction(ops, "torch.logsumexp", "torch.logsumexp(X, dim=D, keepdim=K)", 6, true);
  add_reduction(ops, "torch.var", "torch.var(X, dim=D, keepdim=K)", 3, true);
  add_reduction(ops, "torch.std", "torch.std(X, dim=D, keepdim=K)", 4, true);
  add_reduction(ops, "torch.norm", "torch.norm(X, p=2, dim=D, keepdim=K)", 2, true);
  ops.push_back({.name = "torch.argmax",
                 .category = "reduction",
                 .min_rank = 2,
                 .max_rank = 5,
                 .terminal = true,
                 .apply = [](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
                   const int d = pick_dim(in, rng);
                   if (d < 0) return false;
                   code.line("x = torch.argmax(x, dim=" + std::to_string(d) + ")");
                   out = in;
                   out.erase(out.begin() + d);
                   cost = stream_cost(in, out, 1);
                   return true;
                 }});

  add_along_dim(ops, "torch.softmax", "softmax", "torch.softmax(X, dim=D)", 6);
  add_along_dim(ops, "torch.log_softmax", "softmax", "torch.log_softmax(X, dim=D)", 6);
  add_along_dim(ops, "F.softmin", "softmax", "F.softmin(X, dim=D)", 6);
  add_along_dim(ops, "F.normalize", "norm", "F.normalize(X, p=2.0, dim=D)", 3);
  add_along_dim(ops, "torch.cumsum", "scan", "torch.cumsum(X, dim=D)", 1);
  add_along_dim(ops, "torch.flip", "indexing", "torch.flip(X, dims=[D])", 0);
  add_along_dim(ops, "torch.roll", "indexing", "torch.roll(X, shifts=1, dims=D)", 0);

  add_loss(ops, "F.mse_loss", "F.mse_loss(X, Y)", "randn", 1, 5);
  add_loss(ops, "F.l1_loss", "F.l1_loss(X, Y)", "randn", 1, 5);
  add_loss(ops, "F.smooth_l1_loss", "F.smooth_l1_loss(X, Y)", "randn", 1, 5);
  add_loss(ops, "F.huber_loss", "F.huber_loss(X, Y, delta=1.0)", "randn", 1, 5);
  add_loss(ops, "F.binary_cross_entropy_with_logits", "F.binary_cross_entropy_with_logits(X, Y)",
           "rand", 1, 5);
  add_loss(ops, "F.cross_entropy", "F.cross_entropy(X, Y)", "class", 2, 2);

  add_reshapes(ops);
}

namespace {

void add_reshapes(std::vector<OpDef>& ops) {
  auto add = [&](const char* name, int lo, int hi,
                 std::function<bool(const Shape&, Rng&, ChainCode&, Shape&)> rule) {
    ops.push_back(
        {.name = name,
         .category = "reshape",
         .min_rank = lo,
         .max_rank = hi,
         .apply = [rule](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
           if (!rule(in, rng, code, out)) return false;
           cost = stream_cost(in, out, 0);
           return true;
         }});
  };
  add("torch.flatten", 3, 5, [](const Shape& in, Rng&, ChainCode& code, Shape& out) {
    code.line("x = torch.flatten(x, start_dim=1)");
    out = {in[0], numel(in) / in[0]};
    return true;
  });
  add("torch.transpose", 3, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int r = static_cast<int>(in.size());
    const int a = static_cast<int>(rng.range(1, r - 2));
    const int b = static_cast<int>(rng.range(a + 1, r - 1));
    code.line("x = torch.transpose(x, " + std::to_string(a) + ", " + std::to_string(b) +
              ").contiguous()");
    out = in;
    std::swap(out[static_cast<std::size_t>(a)], out[static_cast<std::size_t>(b)]);
    return true;
  });
  add("Tensor.permute", 3, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    std::vector<int> order = {0};
    std::vector<int> rest;
    for (int d = 1; d < static_cast<int>(in.size()); ++d) rest.push_back(d);
    std::rotate(rest.begin(), rest.begin() + 1 + static_cast<long>(rng.below(rest.size() - 1)),
                rest.end());  // a non-identity rotation of the non-batch dims
    order.insert(order.end(), rest.begin(), rest.end());
    std::string dims;
    out.clear();
    for (int d : order) {
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      out.push_back(in[static_cast<std::size_t>(d)]);
    }
    code.line("x = x.permute(" + dims + ").contiguous()");
    return true;
  });
  add("Tensor.view", 2, 4, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const std::int64_t last = in.back();
    std::vector<std::int64_t> splits;
    for (std::int64_t f : {2, 4, 8, 16}) {
      if (last % f == 0 && last / f >= 2) splits.push_back(f);
    }
    if (splits.empty()) return false;
    const std::int64_t f = rng.pick(splits);
    out = in;
    out.back() = last / f;
    out.push_back(f);
    std::string dims = "x.size(0)";
    for (std::size_t i = 1; i < out.size(); ++i) dims += ", " + std::to_string(out[i]);
    code.line("x = x.view(" + dims + ")");
    return true;
  });
  add("torch.unsqueeze", 2, 4, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int d = static_cast<int>(rng.range(1, static_cast<std::int64_t>(in.size())));
    code.line("x = torch.unsqueeze(x, " + std::to_string(d) + ")");
    out = in;
    out.insert(out.begin() + d, 1);
    return true;
  });
  add("torch.cat", 2, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int d = pick_dim(in, rng, 1);
    if (d < 0) return false;
    code.line("x = torch.cat([x, torch.relu(x)], dim=" + std::to_string(d) + ")");
    out = in;
    out[static_cast<std::size_t>(d)] *= 2;
    return true;
  });
  add("torch.stack", 1, 4, [](const Shape& in, Rng&, ChainCode& code, Shape& out) {
    code.line("x = torch.stack([x, torch.sigmoid(x)], dim=1)");
    out = in;
    out.insert(out.begin() + 1, 2);
    return true;
  });
  add("torch.narrow", 2, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int d = pick_dim(in, rng, 4);
    if (d < 0) return false;
    const std::int64_t len = in[static_cast<std::size_t>(d)] / 2;
    code.line("x = torch.narrow(x, " + std::to_string(d) + ", 1, " + std::to_string(len) + ")");
    out = in;
    out[static_cast<std::size_t>(d)] = len;
    return true;
  });
  add("torch.tril", 3, 5, [](const Shape& in, Rng&, ChainCode& code, Shape& out) {
    code.line("x = torch.tril(x)");
    out = in;
    return true;
  });
  add("torch.triu", 3, 5, [](const Shape& in, Rng&, ChainCode& code, Shape& out) {
    code.line("x = torch.triu(x, diagonal=1)");
    out = in;
    return true;
  });
  add("F.pad", 2, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const std::int64_t p = rng.range(1, 3);
    code.line("x = F.pad(x, (" + std::to_string(p) + ", " + std::to_string(p) + "))");
    out = in;
    out.back() += 2 * p;
    return true;
  });
  add("torch.gather", 2, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int d = pick_dim(in, rng);
    if (d < 0) return false;
    const std::string idx =
        code.input("index", in, "randint:" + std::to_string(in[static_cast<std::size_t>(d)]));
    code.line("x = torch.gather(x, " + std::to_string(d) + ", " + idx + ")");
    out = in;
    return true;
  });
  add("torch.index_select", 2, 5, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int d = pick_dim(in, rng, 4);
    if (d < 0) return false;
    const std::int64_t n = in[static_cast<std::size_t>(d)];
    const std::int64_t stride = rng.range(2, 3);
    code.line("x = torch.index_select(x, " + std::to_string(d) + ", torch.arange(0, " +
              std::to_string(n) + ", " + std::to_string(stride) + ", device=x.device))");
    out = in;
    out[static_cast<std::size_t>(d)] = (n + stride - 1) / stride;
    return true;
  });
  add("torch.repeat_interleave", 2, 4, [](const Shape& in, Rng& rng, ChainCode& code, Shape& out) {
    const int d = pick_dim(in, rng, 1);
    if (d < 0) return false;
    code.line("x = torch.repeat_interleave(x, 2, dim=" + std::to_string(d) + ")");
    out = in;
    out[static_cast<std::size_t>(d)] *= 2;
    return true;
  });
}

}  // namespace
}  // namespace cuda_agent
