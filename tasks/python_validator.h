// Static validation of KernelBench-format task sources without executing them. The sources go,
// many per process, to `python3 -I -c <tasks/validate_task.py>`, which parses each with Python's
// `ast` module (no exec, no import of the task) and answers with what it found: the Model class
// and its forward, get_inputs, get_init_inputs, the imports, the torch operators called, and the
// input shapes and init arguments where they fold to constants. The answer format is in
// docs/formats/tasks.md.
//
//   PythonValidator v({});
//   ASSIGN_OR_RETURN(auto reports, v.check(sources, nullptr));
//   for (auto& r : reports) if (!r.ok) ...  // r.errors says why, e.g. "no function get_inputs"
//
// Robustness: one child serves up to `batch_files` sources. A source that makes the child stall
// past the per-file deadline or crash (a parser blow-up, the memory limit) gets a failed report
// naming that ("validator timed out after 10000 ms"), and a fresh child carries on with the
// sources after it. Only a missing interpreter fails the whole call.
//
// Threading: a PythonValidator holds only options; check() may run on several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "tasks/child_process.h"

namespace cuda_agent {

struct ValidatorOptions {
  /// The interpreter, looked up on PATH. Default: python3 (Debian 12: 3.11; the GPU nodes'
  /// Ubuntu 24.04: 3.12). The script needs Python 3.9 or newer (ast.unparse).
  std::string python = "python3";
  /// Sources per child process. Larger batches start fewer interpreters (about 30 ms each);
  /// smaller ones lose less work to a source that kills its child. Default: 256.
  std::size_t batch_files = 256;
  /// Deadlines and limits of each child. Default: see ChildSpec/ChildLimits; the per-file
  /// deadline (next_line_timeout_ms) is 10 s, far above the ~5 ms a KernelBench file takes.
  ChildLimits limits;
  std::int64_t first_answer_timeout_ms = 20'000;
  std::int64_t per_file_timeout_ms = 10'000;
};

/// One source to check; `name` only labels it (the file path, "rows.jsonl:12").
struct SourceToCheck {
  std::string name;
  std::string source;
};

/// One value from get_inputs() / get_init_inputs(): its source text and what it folded to.
struct ValueSpec {
  std::string expr;  ///< the element's source text (at most 200 characters)
  /// "tensor" (a torch factory call), "value" (a constant), "unknown" (could not be folded).
  std::string kind;
  std::string factory;              ///< tensor: rand, randn, randint, zeros, ...
  std::vector<std::int64_t> shape;  ///< tensor: the shape, when has_shape
  bool has_shape = false;
  std::string dtype;       ///< tensor: float32, int64, ... (empty when unknown)
  std::string value_json;  ///< value: the constant as JSON text
};

/// What the validator found in one source.
struct StaticReport {
  bool ok = false;
  std::vector<std::string> errors;    ///< why it is not a task (empty when ok)
  std::vector<std::string> warnings;  ///< oddities that do not reject it
  std::vector<std::string> imports;   ///< imported modules, sorted
  /// Operators called by Model, in first-use order: "nn.Conv2d", "torch.clamp", "F.gelu",
  /// "Tensor.view" (a method), "operator.add" (a Python operator in forward).
  std::vector<std::string> ops;
  std::vector<std::string> init_params;     ///< Model.__init__ parameters after self
  std::vector<std::string> forward_params;  ///< Model.forward parameters after self
  std::vector<ValueSpec> init_inputs;       ///< get_init_inputs()'s list, when a literal list
  std::vector<ValueSpec> inputs;            ///< get_inputs()'s list, when a literal list
};

/// The embedded validator script (tasks/validate_task.py).
const std::string& validator_script();

class PythonValidator {
 public:
  explicit PythonValidator(ValidatorOptions options);

  /// One report per source, in order. `progress` (may be empty) is called once per source.
  /// Errors: task.child_start when the interpreter cannot be started.
  Expected<std::vector<StaticReport>> check(const std::vector<SourceToCheck>& sources,
                                            const std::function<void(bool ok)>& progress) const;

 private:
  ValidatorOptions options_;
};

/// Parses one answer line of the script into a report (exposed for tests).
Expected<StaticReport> parse_validator_answer(std::string_view line);

}  // namespace cuda_agent
