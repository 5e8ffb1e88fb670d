// Task import (`cuda-agent tasks import`): reads KernelBench directories and JSON Lines files of
// CUDA-Agent-Ops-6K rows, validates every source statically (tasks/python_validator.h: nothing
// is executed) and stores the good ones in the run store. A bad file or row gets an error naming
// it and the reason, and the import carries on.
//
//   ImportOptions o;  // suite from the path's last component
//   ASSIGN_OR_RETURN(ImportReport r, load_tasks("/data/kernelbench", o, progress));
//   ASSIGN_OR_RETURN(SaveCounts c, save_tasks(*store, r.tasks));  // imported vs unchanged
//
// What is read:
//   - a directory: every `*.py` (a KernelBench task: `class Model`, `get_inputs`,
//     `get_init_inputs`) and `*.jsonl` file below it, in sorted order; hidden entries and other
//     files are skipped. A file in a subdirectory gets the suite `<suite>/<subdir path>`, so
//     `kernelbench/level1/19_ReLU.py` imported as suite `kernelbench` lands in
//     `kernelbench/level1`.
//   - a `.py` file: one task named by its stem.
//   - a `.jsonl` file: one task per line, a JSON object with `code` (the program, required),
//     `ops` (a list of operator names, or a string holding such a list) and `data_source`. The
//     task is named by its operators ("Conv2d_ReLU"); the id's hash keeps names unique.
// Before the validator sees a source it must be non-empty, at most `max_file_bytes` long, and
// UTF-8 text without NUL bytes.
//
// Threading: free functions; a call uses only its arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "storage/run_store.h"
#include "tasks/python_validator.h"
#include "tasks/task.h"

namespace cuda_agent {

struct ImportOptions {
  /// Suite of the imported tasks (subdirectories are appended). Default (empty): the last
  /// component of the path, without a `.jsonl` extension.
  std::string suite;
  /// `data_source` of `.py` files. Default: "kernelbench".
  std::string data_source = "kernelbench";
  /// Sources longer than this are refused without being read. Default: 1 MiB (the largest
  /// KernelBench file is about 5 KiB; Ops-6K rows are similar).
  std::int64_t max_file_bytes = std::int64_t{1} << 20;
  /// JSON Lines files longer than this are refused. Default: 1 GiB.
  std::int64_t max_jsonl_bytes = std::int64_t{1} << 30;
  ValidatorOptions validator;
};

/// A file or row that was not imported.
struct ImportFailure {
  std::string where;  ///< "dir/3_bad.py", "rows.jsonl:12"
  std::string reason;
};

struct ImportReport {
  std::vector<Task> tasks;  ///< validated, in input order (duplicate ids removed)
  std::vector<ImportFailure> failures;
  std::uint64_t candidates = 0;  ///< files and rows looked at
  std::uint64_t duplicates = 0;  ///< sources that repeated an earlier one (same id)
};

/// Reads and validates everything under `path`. `progress` (may be empty) is called once per
/// candidate after it was checked. Errors only for the whole call: the path does not exist or
/// cannot be listed (task.import_path), the validator cannot run (task.child_start,
/// task.validator_broken).
Expected<ImportReport> load_tasks(const std::string& path, const ImportOptions& options,
                                  const std::function<void(bool ok)>& progress);

/// How save_tasks treated the tasks it was given.
struct SaveCounts {
  std::uint64_t imported = 0;   ///< written (new ids)
  std::uint64_t unchanged = 0;  ///< already in the store with the same content hash
};

/// Writes the tasks the store does not hold yet, in synced batches; one whose id is stored with
/// another content hash is a task.conflict error (a 48-bit hash-prefix collision).
Expected<SaveCounts> save_tasks(RunStore& store, const std::vector<Task>& tasks);

}  // namespace cuda_agent
