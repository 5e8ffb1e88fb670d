// Internal to cluster/ (not installed, not for other folders): reading option structs and node
// tables from toml++ tables with source positions, collecting problems, and the TOML text of
// values. manifest.cpp, manifest_nodes.cpp and manifest_render.cpp share it.
//
// Threading: values and visitors local to one call of parse_manifest / render_*; no shared state.
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/manifest.h"
#include "core/error.h"
#include "core/option_fields.h"

namespace cuda_agent::manifest_detail {

/// A 1-based position in the manifest; line 0 means unknown (the message then names the file only).
struct Where {
  int line = 0;
  int column = 0;
};
Where where_of(const toml::source_region& region);

/// Problems found in one manifest. Every problem reads "FILE:LINE:COL: CONTEXT: WHAT".
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  /// `context` names the place, e.g. "[run] 'port_base'" or "[[nodes]] #2 'bench_gpus'".
  void add(std::string code, Where where, std::string_view context, std::string_view what);
  bool empty() const { return problems_.empty(); }
  /// The earliest problem (by line, then column; unknown lines last) leads; its code is the code.
  Error to_error() const;

 private:
  struct Problem {
    std::string code;
    Where where;
    std::string text;
  };
  std::string file_;
  std::vector<Problem> problems_;
};

/// " (did you mean 'x'?)" for the candidate nearest to `word` within edit distance 2, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates,
                         char quote = '\'');

/// "a string", "an integer", ... for messages.
std::string_view type_name(const toml::node& node);

/// TOML text of a value: integers in decimal, floats in their shortest exact form with a '.' or an
/// exponent, strings as escaped basic strings, arrays inline.
std::string toml_value(bool value);
std::string toml_value(std::int64_t value);
std::string toml_value(double value);
std::string toml_value(std::string_view value);
std::string toml_value(const std::vector<std::string>& value);
std::string toml_value(const std::vector<std::int64_t>& value);

/// "1024 to 65000", "at least 1", "at most 10" or "" for a field's range; integers print as such.
std::string range_text(const FieldInfo& field, bool integer);

/// A visitor for `visit(V&)` that reads each field from one table, type- and range-checks it and
/// records where each key was. Fields the table lacks keep their value. Problems go to `diag`.
class TableReader {
 public:
  /// `table` may be null (section absent). `context` is "[run]" or "[[nodes]] #2".
  TableReader(const toml::table* table, std::string context, Diagnostics* diag);

  void operator()(const FieldInfo& field, bool& out);
  void operator()(const FieldInfo& field, std::int64_t& out);
  void operator()(const FieldInfo& field, double& out);
  void operator()(const FieldInfo& field, std::string& out);
  void operator()(const FieldInfo& field, std::vector<std::string>& out);
  void operator()(const FieldInfo& field, std::vector<std::int64_t>& out);

  /// After visit(): reports keys of the table that no field names, with the nearest known key.
  void report_unknown_keys();

  bool has(std::string_view key) const { return keys_.count(key) > 0; }
  /// Position of a key present in the table; the table's own position otherwise.
  Where key_where(std::string_view key) const;
  /// Position of element `index` of an array-valued key.
  Where element_where(std::string_view key, std::size_t index) const;
  Where table_where() const { return table_where_; }
  /// "[run] 'port_base'".
  std::string context(std::string_view key) const;
  const std::string& context() const { return context_; }

 private:
  const toml::node* find(const FieldInfo& field);
  void problem(std::string code, Where where, const FieldInfo& field, std::string_view what);
  bool check_range(const FieldInfo& field, Where where, double value, bool integer);
  bool check_choice(const FieldInfo& field, Where where, std::string_view value);

  const toml::table* table_;
  std::string context_;
  Diagnostics* diag_;
  Where table_where_;
  std::vector<std::string_view> known_;
  std::map<std::string, Where, std::less<>> keys_;
  std::map<std::string, std::vector<Where>, std::less<>> elements_;
};

/// Applies `f` to every option section of `m`, in the order the manifest documents them.
template <class M, class F>
void for_each_section(M& m, F&& f) {
  f(m.run);
  f(m.security);
  f(m.store);
  f(m.compile);
  f(m.bench);
  f(m.rollout);
  f(m.learner);
  f(m.model);
  f(m.tasks);
  f(m.corpus);
}

/// What manifest_nodes.cpp keeps of each [[nodes]] table for the checks after reading.
struct NodeSource {
  TableReader reader;
};

/// Reads root["nodes"] into `nodes` (types, ranges, unknown keys, required keys).
std::vector<NodeSource> read_nodes(const toml::table& root, Diagnostics& diag,
                                   std::vector<NodeSpec>& nodes);

/// Checks the meaning of the nodes: roles against GPU lists, GPU indices and sharing rules,
/// unique hosts, exactly one coordinator. Fills in compile_workers defaults.
void check_nodes(const RunOptions& run, const std::vector<NodeSource>& sources,
                 std::vector<NodeSpec>& nodes, Diagnostics& diag);

}  // namespace cuda_agent::manifest_detail
