// The task model: one KernelBench-format problem (a reference `class Model`, `get_inputs()`,
// `get_init_inputs()`) with what import, synthesis and the GPU filter learned about it. Tasks live
// in the run store (storage/run_store.h) as TaskRecord, with the Task encoded as JSON in
// TaskRecord.body; the format, its version field and the id scheme are in docs/formats/tasks.md.
//
//   Task t = task_from_source("kernelbench/level1", "19_ReLU", source, report, "kernelbench");
//   StoreWrite w;
//   w.tasks.push_back(to_record(t, now_unix_ms()));
//   ...
//   ASSIGN_OR_RETURN(Task back, from_record(store->get_task(id).value()));
//
// Ids are content-addressed: `<suite>/<name>-<first 12 hex digits of the SHA-256 of the source>`.
// The same source imported again under the same suite and name gets the same id, and a changed
// source gets a new id, so a task id always means one exact reference program (episodes and
// evaluations that name it stay meaningful).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "messages/store_codec.h"
#include "tasks/python_validator.h"

namespace cuda_agent {

/// The version written into every encoded task. Readers accept this and older versions; a task
/// written by a newer version is refused with task.newer_version.
constexpr int kTaskFormatVersion = 1;

/// The outcome of one filter (DESIGN.md section 2: the GPU filter; static checks at import).
struct FilterResult {
  std::string filter;  ///< "static", "runs", "deterministic", "eager_time", ...
  bool passed = false;
  std::string reason;        ///< why it failed, or a note
  std::int64_t unix_ms = 0;  ///< when it ran
  std::string details_json;  ///< filter-specific JSON (measured times, ...); may be empty
};

/// A baseline time cached with the task (the run store's BaselineRecord is the system of record
/// per device; this copy travels with exported task sets).
struct TaskBaseline {
  std::string device;         ///< "NVIDIA H200"
  std::string torch_version;  ///< "2.11.0"
  std::string precision;      ///< precision flags, e.g. "tf32=off"
  double eager_ms = 0;
  double compile_ms = 0;
  std::int64_t recorded_unix_ms = 0;
};

struct Task {
  TaskId id;
  std::string suite;         ///< "kernelbench/level2", "ops6k", "synth/s42"
  std::string name;          ///< file stem or synthesized name: "19_ReLU", "Conv2d_GELU"
  std::string content_hash;  ///< "sha256:<64 hex digits>" of `source`
  std::string source;        ///< the Python program, byte for byte
  std::string data_source;   ///< where the program came from: "kernelbench", an Ops-6K row's
                             ///< data_source, "synth"
  std::string origin;        ///< where this copy was read: "path/19_ReLU.py", "rows.jsonl:12"
  /// Operators the Model calls, as the validator names them ("nn.Conv2d", "torch.relu", ...).
  std::vector<std::string> ops;
  /// Operators the source declared (an Ops-6K row's `ops`, the synthesizer's chain); may differ
  /// in spelling from `ops`.
  std::vector<std::string> declared_ops;
  std::vector<std::string> imports;
  std::vector<std::string> init_params;     ///< Model.__init__'s parameters
  std::vector<std::string> forward_params;  ///< Model.forward's parameters
  std::vector<ValueSpec> init_inputs;       ///< get_init_inputs()
  std::vector<ValueSpec> inputs;            ///< get_inputs(): shapes and dtypes where known
  std::vector<FilterResult> filters;
  std::vector<TaskBaseline> baselines;
};

/// "sha256:" + 64 lowercase hex digits. SHA-256 rather than core/content_hash.h's BLAKE2b so that
/// anyone can check a task id against its file with `sha256sum`.
std::string task_content_hash(std::string_view source);

/// `<suite>/<name>-<12 hex digits of the hash>`; `name` is cleaned to [A-Za-z0-9_.-] (others
/// become '_') and cut to 80 characters.
TaskId make_task_id(std::string_view suite, std::string_view name, std::string_view hash);

/// A task from a source that passed the validator: id, hash, ops, params, inputs from `report`,
/// and a passed "static" filter result.
Task task_from_source(std::string suite, std::string name, std::string source,
                      const StaticReport& report, std::string data_source, std::string origin,
                      std::int64_t now_unix_ms);

/// The JSON body (docs/formats/tasks.md).
std::string encode_task(const Task& task);
/// Errors (task.corrupt, task.newer_version) name `where` (e.g. the store key).
Expected<Task> decode_task(std::string_view body, std::string_view where);

TaskRecord to_record(const Task& task, std::int64_t created_unix_ms);
/// Decodes the body; the record's id, suite and hash must match the body's (task.corrupt).
Expected<Task> from_record(const TaskRecord& record);

}  // namespace cuda_agent
