// Module-based operators of the synthesizer's catalogue (see op_catalogue.h): linear and matmul,
// convolutions, pooling, resampling and normalisation; plus ChainCode and the catalogue itself.
#include <algorithm>

#include "tasks/op_catalogue.h"

namespace cuda_agent {
namespace {

constexpr double kF = 4;  // bytes per float32 element

using Rule = std::function<bool(const Shape&, Rng&, ChainCode&, Shape&, OpCost&)>;

std::string s(std::int64_t v) { return std::to_string(v); }

double spatial(const Shape& x) {  // elements per channel: dims 2..
  double n = 1;
  for (std::size_t i = 2; i < x.size(); ++i) n *= static_cast<double>(x[i]);
  return n;
}

// Streams in -> out with `flops` per input element, `reads` passes over the input.
OpCost stream(const Shape& in, const Shape& out, double flops, double reads = 1) {
  const double a = static_cast<double>(numel(in)), b = static_cast<double>(numel(out));
  return {.flops_per_row = flops * a,
          .bytes_per_row = kF * (reads * a + b),
          .peak_bytes_per_row = kF * (a + b)};
}

void add(std::vector<OpDef>& ops, const std::string& name, const char* category, int lo, int hi,
         bool anchor, Rule rule) {
  ops.push_back({.name = name,
                 .category = category,
                 .min_rank = lo,
                 .max_rank = hi,
                 .anchor = anchor,
                 .apply = std::move(rule)});
}

const char* kDimName[] = {"", "1d", "2d", "3d"};

void add_convs(std::vector<OpDef>& ops) {
  static const std::string names[] = {"nn.Conv1d", "nn.Conv2d", "nn.Conv3d"};
  static const std::string tnames[] = {"nn.ConvTranspose1d", "nn.ConvTranspose2d",
                                       "nn.ConvTranspose3d"};
  for (int nd = 1; nd <= 3; ++nd) {
    add(ops, names[nd - 1], "conv", nd + 2, nd + 2, true,
        [nd](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
          const std::int64_t c = in[1];
          const std::int64_t o = nd == 3 ? rng.pick(std::vector<std::int64_t>{8, 16, 32})
                                         : rng.pick(std::vector<std::int64_t>{16, 32, 64, 128});
          const std::int64_t k = nd == 3 ? 3 : rng.pick(std::vector<std::int64_t>{1, 3, 3, 5});
          const std::int64_t stride = rng.chance(0.25) ? 2 : 1;
          const std::int64_t pad = rng.chance(0.5) ? k / 2 : 0;
          out = {in[0], o};
          for (std::size_t i = 2; i < in.size(); ++i) {
            const std::int64_t len = (in[i] + 2 * pad - k) / stride + 1;
            if (in[i] + 2 * pad < k || len < 2) return false;
            out.push_back(len);
          }
          const std::string expr =
              "nn.Conv" + std::string(kDimName[nd]) + "(" + code.param("in_channels", s(c)) + ", " +
              code.param("out_channels", s(o)) + ", " + code.param("kernel_size", s(k)) +
              ", stride=" + code.param("stride", s(stride)) +
              ", padding=" + code.param("padding", s(pad)) + ")";
          code.line("x = " + code.module("conv", expr) + "(x)");
          double kvol = 1;
          for (int i = 0; i < nd; ++i) kvol *= static_cast<double>(k);
          const double w = static_cast<double>(c * o) * kvol;
          cost = stream(in, out, 0);
          cost.flops_per_row = 2 * w * spatial(out);
          cost.fixed_bytes = kF * w;
          cost.param_bytes = kF * w;
          return true;
        });
    add(ops, tnames[nd - 1], "conv", nd + 2, nd + 2, true,
        [nd](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
          const std::int64_t c = in[1];
          const std::int64_t o = nd == 3 ? rng.pick(std::vector<std::int64_t>{8, 16, 32})
                                         : rng.pick(std::vector<std::int64_t>{16, 32, 64});
          const std::int64_t k = rng.pick(std::vector<std::int64_t>{2, 3, 4});
          const std::int64_t stride = rng.chance(0.5) ? 2 : 1;
          const std::int64_t pad = rng.chance(0.5) ? 1 : 0;
          out = {in[0], o};
          for (std::size_t i = 2; i < in.size(); ++i) {
            const std::int64_t len = (in[i] - 1) * stride - 2 * pad + k;
            if (len < 2) return false;
            out.push_back(len);
          }
          const std::string expr =
              "nn.ConvTranspose" + std::string(kDimName[nd]) + "(" +
              code.param("in_channels", s(c)) + ", " + code.param("out_channels", s(o)) + ", " +
              code.param("kernel_size", s(k)) + ", stride=" + code.param("stride", s(stride)) +
              ", padding=" + code.param("padding", s(pad)) + ")";
          code.line("x = " + code.module("conv_transpose", expr) + "(x)");
          double kvol = 1;
          for (int i = 0; i < nd; ++i) kvol *= static_cast<double>(k);
          const double w = static_cast<double>(c * o) * kvol;
          cost = stream(in, out, 0);
          cost.flops_per_row = 2 * w * spatial(in);
          cost.fixed_bytes = kF * w;
          cost.param_bytes = kF * w;
          return true;
        });
  }
}

// A [F, G] weight product on the last dim: nn.Linear, F.linear, torch.matmul, einsum, addmm.
void add_matmuls(std::vector<OpDef>& ops) {
  struct Form {
    const char* name;
    int lo, hi;
  };
  for (Form f : {Form{"nn.Linear", 2, 3}, Form{"F.linear", 2, 3}, Form{"torch.matmul", 2, 4},
                 Form{"torch.einsum", 3, 3}, Form{"torch.addmm", 2, 2}}) {
    const std::string name = f.name;
    add(ops, f.name, "linear", f.lo, f.hi, true,
        [name](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
          const std::int64_t k = in.back();
          if (k < 16) return false;
          const std::int64_t g =
              rng.pick(std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192});
          if (name == "nn.Linear") {
            const std::string m =
                code.module("linear", "nn.Linear(" + code.param("in_features", s(k)) + ", " +
                                          code.param("out_features", s(g)) + ")");
            code.line("x = " + m + "(x)");
          } else {
            const std::string kk = code.param("in_features", s(k));
            const std::string gg = code.param("out_features", s(g));
            const bool transposed = name == "F.linear";
            const std::string w = code.module(
                "weight", "nn.Parameter(torch.randn(" +
                              (transposed ? gg + ", " + kk : kk + ", " + gg) + ") * 0.02)");
            const std::string b = code.module("bias", "nn.Parameter(torch.zeros(" + gg + "))");
            if (name == "F.linear") code.line("x = F.linear(x, " + w + ", " + b + ")");
            if (name == "torch.matmul") code.line("x = torch.matmul(x, " + w + ") + " + b);
            if (name == "torch.einsum")
              code.line("x = torch.einsum(\"bij,jk->bik\", x, " + w + ")");
            if (name == "torch.addmm") code.line("x = torch.addmm(" + b + ", x, " + w + ")");
          }
          out = in;
          out.back() = g;
          const double rows = static_cast<double>(numel(in) / k);
          cost = stream(in, out, 0);
          cost.flops_per_row = 2 * rows * static_cast<double>(k * g);
          cost.fixed_bytes = kF * static_cast<double>(k * g);
          cost.param_bytes = cost.fixed_bytes;
          return true;
        });
  }
  add(ops, "torch.bmm", "linear", 3, 3, true,
      [](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
        const std::int64_t l = in[1], k = in[2];
        if (k < 16 || l < 16) return false;
        const std::int64_t m = rng.pick(std::vector<std::int64_t>{64, 128, 256, 512});
        const std::string y = code.input("y", {in[0], k, m});
        code.line("x = torch.bmm(x, " + y + ")");
        out = {in[0], l, m};
        cost = stream(in, out, 0, 1);
        cost.bytes_per_row += kF * static_cast<double>(k * m);
        cost.flops_per_row = 2.0 * static_cast<double>(l * k * m);
        return true;
      });
}

void add_pools(std::vector<OpDef>& ops) {
  static const std::string kinds[] = {"Max", "Avg"};
  for (int nd = 1; nd <= 3; ++nd) {
    for (const std::string& kind : kinds) {
      add(ops, "nn." + kind + "Pool" + kDimName[nd], "pool", nd + 2, nd + 2, false,
          [nd, kind](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
            const std::int64_t k = rng.pick(std::vector<std::int64_t>{2, 2, 3});
            out = {in[0], in[1]};
            for (std::size_t i = 2; i < in.size(); ++i) {
              if (in[i] < 2 * k) return false;
              out.push_back((in[i] - k) / k + 1);
            }
            const std::string m =
                code.module(kind == "Max" ? "max_pool" : "avg_pool",
                            "nn." + kind + "Pool" + kDimName[nd] +
                                "(kernel_size=" + code.param("pool_kernel_size", s(k)) + ")");
            code.line("x = " + m + "(x)");
            cost = stream(in, out, 1);
            return true;
          });
      add(ops, "nn.Adaptive" + kind + "Pool" + kDimName[nd], "pool", nd + 2, nd + 2, false,
          [nd, kind](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
            const std::int64_t o = rng.pick(std::vector<std::int64_t>{1, 2, 4, 7});
            out = {in[0], in[1]};
            for (std::size_t i = 2; i < in.size(); ++i) {
              if (in[i] < 2 * o) return false;
              out.push_back(o);
            }
            const std::string m =
                code.module("adaptive_pool", "nn.Adaptive" + kind + "Pool" + kDimName[nd] + "(" +
                                                 code.param("output_size", s(o)) + ")");
            code.line("x = " + m + "(x)");
            cost = stream(in, out, 1);
            return true;
          });
    }
  }
  add(ops, "nn.LPPool2d", "pool", 4, 4, false,
      [](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
        if (in[2] < 4 || in[3] < 4) return false;
        out = {in[0], in[1], in[2] / 2, in[3] / 2};
        code.line("x = " + code.module("lp_pool", "nn.LPPool2d(2, kernel_size=2)") +
                  "(torch.abs(x) + 1e-06)");
        cost = stream(in, out, 4);
        return true;
      });
  add(ops, "nn.Upsample", "resample", 3, 5, false,
      [](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
        out = in;
        for (std::size_t i = 2; i < in.size(); ++i) out[i] *= 2;
        code.line("x = " +
                  code.module("upsample", "nn.Upsample(scale_factor=2, mode=\"nearest\")") + "(x)");
        cost = stream(in, out, 0);
        return true;
      });
  add(ops, "F.interpolate", "resample", 4, 4, false,
      [](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
        out = {in[0], in[1], in[2] * 2, in[3] * 2};
        code.line("x = F.interpolate(x, scale_factor=2.0, mode=\"bilinear\", align_corners=False)");
        cost = stream(in, out, 8);
        return true;
      });
  add(ops, "nn.PixelShuffle", "resample", 4, 4, false,
      [](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
        if (in[1] % 4 != 0) return false;
        out = {in[0], in[1] / 4, in[2] * 2, in[3] * 2};
        code.line("x = " + code.module("pixel_shuffle", "nn.PixelShuffle(2)") + "(x)");
        cost = stream(in, out, 0);
        return true;
      });
  add(ops, "nn.PixelUnshuffle", "resample", 4, 4, false,
      [](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
        if (in[2] % 2 != 0 || in[3] % 2 != 0 || in[2] < 4 || in[3] < 4) return false;
        out = {in[0], in[1] * 4, in[2] / 2, in[3] / 2};
        code.line("x = " + code.module("pixel_unshuffle", "nn.PixelUnshuffle(2)") + "(x)");
        cost = stream(in, out, 0);
        return true;
      });
}

// Normalisations and per-channel parameter ops; dim 1 is the channel dim.
void add_norms(std::vector<OpDef>& ops) {
  auto norm = [&](const std::string& name, int lo, int hi, bool anchor, std::string hint,
                  std::function<std::string(const Shape&, Rng&, ChainCode&)> make) {
    add(ops, name, "norm", lo, hi, anchor,
        [hint, make](const Shape& in, Rng& rng, ChainCode& code, Shape& out, OpCost& cost) {
          const std::string expr = make(in, rng, code);
          if (expr.empty()) return false;
          code.line("x = " + code.module(hint, expr) + "(x)");
          out = in;
          cost = stream(in, out, 8, 2);
          cost.param_bytes = 2 * kF * static_cast<double>(in.size() > 1 ? in[1] : 1);
          return true;
        });
  };
  norm("nn.BatchNorm1d", 2, 3, true, "batch_norm", [](const Shape& in, Rng&, ChainCode& code) {
    return "nn.BatchNorm1d(" + code.param("num_features", s(in[1])) + ")";
  });
  norm("nn.BatchNorm2d", 4, 4, true, "batch_norm", [](const Shape& in, Rng&, ChainCode& code) {
    return "nn.BatchNorm2d(" + code.param("num_features", s(in[1])) + ")";
  });
  norm("nn.BatchNorm3d", 5, 5, true, "batch_norm", [](const Shape& in, Rng&, ChainCode& code) {
    return "nn.BatchNorm3d(" + code.param("num_features", s(in[1])) + ")";
  });
  norm("nn.LayerNorm", 2, 5, true, "layer_norm", [](const Shape& in, Rng&, ChainCode& code) {
    if (in.back() < 2) return std::string();
    return "nn.LayerNorm(" + code.param("normalized_shape", s(in.back())) + ")";
  });
  norm("nn.GroupNorm", 3, 5, true, "group_norm", [](const Shape& in, Rng& rng, ChainCode& code) {
    std::vector<std::int64_t> groups;
    for (std::int64_t g : {2, 4, 8, 16}) {
      if (in[1] % g == 0 && in[1] > g) groups.push_back(g);
    }
    if (groups.empty()) return std::string();
    return "nn.GroupNorm(" + code.param("num_groups", s(rng.pick(groups))) + ", " +
           code.param("num_channels", s(in[1])) + ")";
  });
  for (int nd = 1; nd <= 3; ++nd) {
    static const std::string names[] = {"nn.InstanceNorm1d", "nn.InstanceNorm2d",
                                        "nn.InstanceNorm3d"};
    norm(names[nd - 1], nd + 2, nd + 2, false, "instance_norm",
         [nd](const Shape& in, Rng&, ChainCode& code) {
           if (spatial(in) < 4) return std::string();
           return "nn.InstanceNorm" + std::string(kDimName[nd]) + "(" +
                  code.param("num_features", s(in[1])) + ")";
         });
  }
  norm("nn.LocalResponseNorm", 3, 5, false, "lrn", [](const Shape& in, Rng& rng, ChainCode& code) {
    if (in[1] < 4) return std::string();
    return "nn.LocalResponseNorm(" +
           code.param("lrn_size", s(rng.pick(std::vector<std::int64_t>{2, 3, 5}))) + ")";
  });
  norm("nn.PReLU", 2, 5, false, "prelu", [](const Shape& in, Rng&, ChainCode& code) {
    return "nn.PReLU(num_parameters=" + code.param("num_channels", s(in[1])) + ")";
  });

  // x + self.bias / x * self.scale with a per-channel parameter of shape (C, 1, ...).
  for (const char* name : {"operator.add(parameter)", "operator.mul(parameter)"}) {
    const bool is_add = std::string(name) == "operator.add(parameter)";
    add(ops, name, "elementwise", 2, 5, false,
        [is_add](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
          Shape p = {in[1]};
          for (std::size_t i = 2; i < in.size(); ++i) p.push_back(1);
          const std::string shape =
              code.param(is_add ? "bias_shape" : "scale_shape", tuple_literal(p));
          const std::string init = is_add ? "torch.randn(" + shape + ") * 0.02"
                                          : "1.0 + torch.randn(" + shape + ") * 0.02";
          const std::string m =
              code.module(is_add ? "bias" : "scale", "nn.Parameter(" + init + ")");
          code.line("x = x " + std::string(is_add ? "+ " : "* ") + m);
          out = in;
          cost = stream(in, out, 1);
          cost.param_bytes = kF * static_cast<double>(in[1]);
          return true;
        });
  }
  add(ops, "F.glu", "activation", 2, 5, false,
      [](const Shape& in, Rng&, ChainCode& code, Shape& out, OpCost& cost) {
        if (in[1] % 2 != 0) return false;
        code.line("x = F.glu(x, dim=1)");
        out = in;
        out[1] /= 2;
        cost = stream(in, out, 5);
        return true;
      });
}

}  // namespace

std::string ChainCode::unique(const std::string& hint) {
  static const std::set<std::string> reserved = {
      "x",      "torch", "nn",         "F",          "self",
      "super",  "Model", "batch_size", "get_inputs", "get_init_inputs",
      "lambda", "input", "min",        "max",        "sum",
      "round",  "pow",   "abs"};
  std::string name = hint;
  for (int i = 2; reserved.count(name) || used_names.count(name); ++i) {
    name = hint + "_" + std::to_string(i);
  }
  used_names.insert(name);
  return name;
}

std::string ChainCode::param(const std::string& hint, const std::string& literal) {
  const std::string name = unique(hint);
  init_args.emplace_back(name, literal);
  return name;
}

std::string ChainCode::attr(const std::string& hint, const std::string& literal) {
  const std::string name = param(hint, literal);
  init_lines.push_back("self." + name + " = " + name);
  return "self." + name;
}

std::string ChainCode::module(const std::string& hint, const std::string& expr) {
  const std::string name = unique(hint);
  init_lines.push_back("self." + name + " = " + expr);
  return "self." + name;
}

std::string ChainCode::input(const std::string& hint, Shape shape, std::string factory) {
  const std::string name = unique(hint);
  inputs.push_back({name, std::move(shape), std::move(factory)});
  return name;
}

void add_module_ops(std::vector<OpDef>& ops) {
  add_matmuls(ops);
  add_convs(ops);
  add_pools(ops);
  add_norms(ops);
}

const std::vector<OpDef>& op_catalogue() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> v;
    add_module_ops(v);
    add_pointwise_ops(v);
    return v;
  }();
  return ops;
}

}  // namespace cuda_agent
