// Corpus solutions and their bugs (see corpus_solutions.h). The .cu text is built line by line so
// that the step lines' numbers are known to the bug injector.
#include "rollout/corpus_solutions.h"

#include <cctype>

#include "tasks/op_cuda.h"

namespace cuda_agent {
namespace {

// The .cu text, one line at a time.
class Lines {
 public:
  int add(const std::string& line) {
    text_ += line + "\n";
    return ++count_;
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int count_ = 0;
};

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// "v = <expr>;" for each step, `other` naming a binary step's second operand. The solutions put
// the operator's name on the line before ("// <op>"): the name is copied from the task first, and
// the expression then follows the name just written (easier for a small model than recalling the
// k-th operator of the chain inside the expression).
Expected<std::vector<std::string>> step_statements(const PointwiseChainTask& task,
                                                   const std::vector<std::string>& others) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < task.steps.size(); ++k) {
    const ChainStep& s = task.steps[k];
    ASSIGN_OR_RETURN(std::string e, op_cuda_expression(s.op, s.param, "v", others[k]));
    out.push_back("v = " + e + ";");
  }
  return out;
}

std::string model_new_py(const PointwiseChainTask& task, const std::string& doc,
                         const std::vector<std::string>& forward_body) {
  std::string init_params;
  for (const auto& [name, literal] : task.init_args) init_params += ", " + name;
  std::string py =
      "import torch\nimport torch.nn as nn\n\nimport kernels\n\n\nclass ModelNew(nn.Module):\n"
      "    \"\"\"" +
      doc + "\"\"\"\n\n    def __init__(self" + init_params +
      "):\n        super(ModelNew, self).__init__()\n";
  for (const auto& [name, literal] : task.init_args)
    py += "        self." + name + " = " + name + "  # a constant in the kernel: " + literal + "\n";
  py += "\n    def forward(self, " + join(task.inputs, ", ") + "):\n";
  for (const std::string& l : forward_body) py += "        " + l + "\n";
  return py;
}

// The fused styles share a device function applying the whole chain to one element.
Expected<CorpusSolution> fused(const PointwiseChainTask& task, SolutionStyle style,
                               const std::string& name) {
  CorpusSolution s;
  s.style = style;
  s.cu_path = "kernels/" + name + ".cu";
  std::vector<std::string> others(task.steps.size());
  std::vector<std::string> scalar_params = {"float v"};
  for (std::size_t k = 0; k < task.steps.size(); ++k)
    if (!task.steps[k].input.empty()) {
      others[k] = task.steps[k].input;
      scalar_params.push_back("float " + task.steps[k].input);
    }
  ASSIGN_OR_RETURN(std::vector<std::string> steps, step_statements(task, others));
  // Pointer parameters: the inputs, then out.
  std::vector<std::string> in_ptrs, in_names, in4_ptrs, in4_casts, elem_args;
  for (const std::string& in : task.inputs) {
    in_ptrs.push_back("const float* __restrict__ " + in);
    in4_ptrs.push_back("const float4* __restrict__ " + in);
    in4_casts.push_back("reinterpret_cast<const float4*>(" + in + ")");
    in_names.push_back(in);
    elem_args.push_back(in + "[i]");
  }
  std::string chain;
  for (const ChainStep& st : task.steps) chain += (chain.empty() ? "" : " -> ") + st.op;

  Lines cu;
  const bool vec = style == SolutionStyle::kFusedVectorized;
  const bool serial = style == SolutionStyle::kSerial;
  cu.add("// " + chain +
         (serial ? ": the whole chain per element, in a single block of threads."
                 : ", fused: each element is read once and written once."));
  cu.add("#include <cuda_runtime.h>");
  cu.add("");
  cu.add("static __device__ __forceinline__ float chain(" + join(scalar_params, ", ") + ") {");
  for (std::size_t k = 0; k < steps.size(); ++k) {
    cu.add("  // " + task.steps[k].op);
    s.step_lines.push_back(cu.add("  " + steps[k]));
  }
  cu.add("  return v;");
  cu.add("}");
  cu.add("");
  std::vector<std::string> launcher_params = in_ptrs;
  for (std::string& p : launcher_params) p.replace(p.find(" __restrict__"), 13, "");
  launcher_params.push_back("float* out");
  launcher_params.push_back("long long n");
  launcher_params.push_back("cudaStream_t stream");
  const std::string launcher = name + "_launch";
  const std::string args = join(in_names, ", ") + ", out, n";
  std::string ptr_types;  // for the demangled kernel names
  for (std::size_t k = 0; k < task.inputs.size(); ++k) ptr_types += "float const*, ";

  if (vec) {
    std::vector<std::string> p4 = in4_ptrs;
    p4.push_back("float4* __restrict__ out");
    p4.push_back("long long n4");
    cu.add("__global__ void " + name + "_vec4(" + join(p4, ", ") + ") {");
    cu.add("  const long long stride = (long long)gridDim.x * blockDim.x;");
    cu.add(
        "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; "
        "i += stride) {");
    std::vector<std::string> lanes[4];
    for (const std::string& in : task.inputs) {
      cu.add("    const float4 " + in + "4 = " + in + "[i];");
      for (const char* c : {"x", "y", "z", "w"})
        lanes[c[0] == 'x' ? 0 : c[0] == 'y' ? 1 : c[0] == 'z' ? 2 : 3].push_back(in + "4." + c);
    }
    cu.add("    float4 r;");
    const char* comp[4] = {"x", "y", "z", "w"};
    for (int c = 0; c < 4; ++c)
      cu.add("    r." + std::string(comp[c]) + " = chain(" + join(lanes[c], ", ") + ");");
    cu.add("    out[i] = r;");
    cu.add("  }");
    cu.add("}");
    cu.add("");
    std::vector<std::string> pt = in_ptrs;
    pt.push_back("float* __restrict__ out");
    pt.push_back("long long from");
    pt.push_back("long long n");
    cu.add("__global__ void " + name + "_tail(" + join(pt, ", ") + ") {");
    cu.add("  const long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;");
    cu.add("  if (i < n) out[i] = chain(" + join(elem_args, ", ") + ");");
    cu.add("}");
    cu.add("");
    cu.add("extern \"C\" void " + launcher + "(" + join(launcher_params, ", ") + ") {");
    cu.add("  const long long n4 = n / 4;");
    cu.add("  if (n4 > 0) {");
    cu.add("    long long blocks = (n4 + 255) / 256;");
    cu.add("    if (blocks > 4096) blocks = 4096;");
    std::vector<std::string> a4 = in4_casts;
    a4.push_back("reinterpret_cast<float4*>(out)");
    a4.push_back("n4");
    cu.add("    " + name + "_vec4<<<(unsigned)blocks, 256, 0, stream>>>(" + join(a4, ", ") + ");");
    cu.add("  }");
    cu.add("  if (n4 * 4 < n) " + name + "_tail<<<1, 4, 0, stream>>>(" + join(in_names, ", ") +
           ", out, n4 * 4, n);");
    cu.add("}");
    std::string ptr4;
    for (std::size_t k = 0; k < task.inputs.size(); ++k) ptr4 += "float4 const*, ";
    s.kernels = {name + "_vec4(" + ptr4 + "float4*, long long)",
                 name + "_tail(" + ptr_types + "float*, long long, long long)"};
    s.summary =
        "one kernel for the whole chain, four floats per thread through float4 loads and "
        "stores in a grid-stride loop";
  } else {
    std::vector<std::string> pk = in_ptrs;
    pk.push_back("float* __restrict__ out");
    pk.push_back("long long n");
    const std::string kernel = name + (serial ? "_serial" : "_kernel");
    cu.add("__global__ void " + kernel + "(" + join(pk, ", ") + ") {");
    if (serial) {
      cu.add("  for (long long i = threadIdx.x; i < n; i += blockDim.x) out[i] = chain(" +
             join(elem_args, ", ") + ");");
    } else {
      cu.add("  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;");
      cu.add("  if (i < n) out[i] = chain(" + join(elem_args, ", ") + ");");
    }
    cu.add("}");
    cu.add("");
    cu.add("extern \"C\" void " + launcher + "(" + join(launcher_params, ", ") + ") {");
    if (serial) {
      cu.add("  " + kernel + "<<<1, 256, 0, stream>>>(" + args + ");");
    } else {
      cu.add("  const unsigned blocks = (unsigned)((n + 255) / 256);");
      cu.add("  " + kernel + "<<<blocks, 256, 0, stream>>>(" + args + ");");
    }
    cu.add("}");
    s.kernels = {kernel + "(" + ptr_types + "float*, long long)"};
    s.summary = serial ? "the chain per element in a single block of 256 threads that walks the "
                         "whole tensor"
                       : "one kernel for the whole chain, one element per thread";
  }
  s.cu = cu.text();
  s.launchers = {launcher};
  s.model_new =
      model_new_py(task, chain + ": " + s.summary + ".",
                   {"out = torch.empty_like(x)",
                    "kernels." + launcher + "(" + join(in_names, ", ") + ", out, " + "x.numel())",
                    "return out"});
  return s;
}

// A kernel and a launcher per step, as PyTorch eager runs the chain.
Expected<CorpusSolution> per_op(const PointwiseChainTask& task, const std::string& name) {
  CorpusSolution s;
  s.style = SolutionStyle::kPerOpKernels;
  s.cu_path = "kernels/" + name + ".cu";
  std::vector<std::string> others(task.steps.size());
  for (std::size_t k = 0; k < task.steps.size(); ++k)
    if (!task.steps[k].input.empty()) others[k] = "w";
  ASSIGN_OR_RETURN(std::vector<std::string> steps, step_statements(task, others));
  Lines cu;
  cu.add("// One kernel per operator, launched in order; each step reads and writes the tensor.");
  cu.add("#include <cuda_runtime.h>");
  std::vector<std::string> body;
  body.push_back("n = x.numel()");
  std::string current = "x";
  for (std::size_t k = 0; k < task.steps.size(); ++k) {
    const ChainStep& st = task.steps[k];
    const bool binary = !st.input.empty();
    const std::string launcher = "step" + std::to_string(k + 1);
    const std::string kernel = launcher + "_kernel";
    cu.add("");
    cu.add("__global__ void " + kernel + "(const float* __restrict__ in, " +
           (binary ? "const float* __restrict__ other, " : "") +
           "float* __restrict__ out, long long n) {");
    cu.add("  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;");
    cu.add("  if (i < n) {");
    cu.add("    float v = in[i];");
    if (binary) cu.add("    const float w = other[i];");
    cu.add("    // " + st.op);
    s.step_lines.push_back(cu.add("    " + steps[k]));
    cu.add("    out[i] = v;");
    cu.add("  }");
    cu.add("}");
    cu.add("");
    cu.add("extern \"C\" void " + launcher + "(const float* in, " +
           (binary ? "const float* other, " : "") +
           "float* out, long long n, cudaStream_t stream) {");
    cu.add("  " + kernel + "<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(in, " +
           (binary ? "other, " : "") + "out, n);");
    cu.add("}");
    s.launchers.push_back(launcher);
    s.kernels.push_back(kernel + "(float const*, " + (binary ? "float const*, " : "") +
                        "float*, long long)");
    const std::string t = "t" + std::to_string(k + 1);
    body.push_back(t + " = torch.empty_like(x)");
    body.push_back("kernels." + launcher + "(" + current + ", " + (binary ? st.input + ", " : "") +
                   t + ", n)");
    current = t;
  }
  body.push_back("return " + current);
  s.cu = cu.text();
  s.summary =
      "one kernel per operator, launched in order, with an intermediate tensor between "
      "steps";
  std::string chain;
  for (const ChainStep& st : task.steps) chain += (chain.empty() ? "" : " -> ") + st.op;
  s.model_new = model_new_py(task, chain + ": " + s.summary + ".", body);
  return s;
}

}  // namespace

const char* to_string(SolutionStyle style) {
  switch (style) {
    case SolutionStyle::kFusedVectorized: return "fused_vectorized";
    case SolutionStyle::kFusedScalar: return "fused_scalar";
    case SolutionStyle::kPerOpKernels: return "per_op_kernels";
    case SolutionStyle::kSerial: return "serial";
  }
  return "?";
}

const char* to_string(BugKind kind) {
  return kind == BugKind::kMissingSemicolon ? "missing_semicolon" : "undeclared_identifier";
}

Expected<CorpusSolution> write_solution(const PointwiseChainTask& task, SolutionStyle style) {
  // Names that do not depend on the task (kernels/chain.cu, chain_kernel, chain_launch, step2):
  // names spelled from the operators must be copied consistently into every declaration and call,
  // a slip a from-scratch policy made in most of its first turns on the H100 (launching
  // maximum_tanh_kernel after defining hardsigmoid_maximum_kernel).
  if (style == SolutionStyle::kPerOpKernels) return per_op(task, "chain");
  return fused(task, style, "chain");
}

Expected<InjectedBug> inject_bug(const CorpusSolution& solution, BugKind kind, std::size_t step) {
  if (step >= solution.step_lines.size())
    return make_error(ErrorCategory::kInvalidInput, "corpus.bug_step",
                      "step " + std::to_string(step) + " of a solution with " +
                          std::to_string(solution.step_lines.size()) + " steps");
  std::vector<std::string> lines;
  for (std::size_t b = 0, e; b < solution.cu.size(); b = e + 1) {
    e = solution.cu.find('\n', b);
    lines.push_back(solution.cu.substr(b, e - b));
  }
  const int n = solution.step_lines[step];
  std::string& line = lines[static_cast<std::size_t>(n - 1)];
  const std::size_t indent = line.find_first_not_of(' ');
  InjectedBug bug;
  bug.good_line = line.substr(indent);
  int error_line = n;
  std::size_t column = 0;  // 0-based in the reported line
  std::string message;
  if (kind == BugKind::kUndeclaredIdentifier) {
    // The first read of v on the right-hand side ("v = <expr>") becomes `val`.
    std::size_t p = line.find("= ") + 2;
    for (;; ++p) {
      p = line.find('v', p);
      const auto ident = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      };
      if (p == std::string::npos) break;
      if (!ident(line[p - 1]) && !ident(line[p + 1])) break;
    }
    if (p == std::string::npos)
      return make_error(ErrorCategory::kInternal, "corpus.bug_step", "no read of v in: " + line);
    line.replace(p, 1, "val");
    column = p;
    message = "identifier \"val\" is undefined";
  } else {
    line.erase(line.rfind(';'), 1);
    // nvcc reports the missing ';' at the next token: the first character of the next line that
    // is not a comment alone (the next step's "// <op>" line is skipped).
    error_line = n + 1;
    auto comment_only = [&](int number) {
      const std::string& l = lines[static_cast<std::size_t>(number - 1)];
      const std::size_t first = l.find_first_not_of(' ');
      return first != std::string::npos && l.compare(first, 2, "//") == 0;
    };
    while (error_line < static_cast<int>(lines.size()) && comment_only(error_line)) ++error_line;
    column = lines[static_cast<std::size_t>(error_line - 1)].find_first_not_of(' ');
    message = "expected a \";\"";
  }
  bug.bad_line = line.substr(indent);
  std::string broken;
  for (const std::string& l : lines) broken += l + "\n";
  bug.broken_cu = std::move(broken);
  // edit_file replaces one occurrence: a broken line found elsewhere too (a missing ';' whose line
  // is the start of another step's) could not be fixed by quoting it.
  const std::size_t first = bug.broken_cu.find(bug.bad_line);
  if (bug.broken_cu.find(bug.bad_line, first + 1) != std::string::npos)
    return make_error(ErrorCategory::kInvalidInput, "corpus.bug_not_unique",
                      "the broken line occurs more than once: " + bug.bad_line);
  // nvcc echoes the line without its // comment and the spaces before it.
  std::string shown = lines[static_cast<std::size_t>(error_line - 1)];
  if (const std::size_t c = shown.find("//"); c != std::string::npos) shown.erase(c);
  shown.erase(shown.find_last_not_of(' ') + 1);
  bug.nvcc_output = solution.cu_path + "(" + std::to_string(error_line) + "): error: " + message +
                    "\n  " + shown + "\n  " + std::string(column, ' ') + "^\n\n" +
                    "1 error detected in the compilation of \"" + solution.cu_path + "\".\n";
  return bug;
}

}  // namespace cuda_agent
