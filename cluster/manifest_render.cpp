// render_defaults / render_manifest: option structs as commented TOML, from their visit() lists.
#include <string>
#include <type_traits>

#include "cluster/manifest_internal.h"

namespace cuda_agent {

using manifest_detail::toml_value;

namespace {

constexpr std::size_t kWidth = 100;

// Appends `text` as comment lines no wider than kWidth, each starting with `prefix`.
void append_comment(std::string& out, std::string_view prefix, std::string_view text) {
  std::string line(prefix);
  bool empty_line = true;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!empty_line && line.size() + 1 + word.size() > kWidth) {
      out += line + '\n';
      line = prefix;
      empty_line = true;
    }
    if (!empty_line) line += ' ';
    line += word;
    empty_line = false;
  }
  out += line + '\n';
}

std::string rule(std::string_view title) {
  std::string line = "# == " + std::string(title) + " ";
  if (line.size() < kWidth) line.append(kWidth - line.size(), '=');
  return line + '\n';
}

template <class T>
constexpr std::string_view type_text() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  if constexpr (std::is_same_v<T, std::int64_t>) return "integer";
  if constexpr (std::is_same_v<T, double>) return "number";
  if constexpr (std::is_same_v<T, std::string>) return "string";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "array of strings";
  if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) return "array of integers";
}

template <class T>
std::string meta_text(const FieldInfo& field) {
  std::string meta = "Type: " + std::string(type_text<T>()) + ".";
  if (!field.unit.empty()) meta += " Unit: " + std::string(field.unit) + ".";
  constexpr bool kNumber = std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>;
  if constexpr (kNumber) {
    std::string range = manifest_detail::range_text(field, std::is_same_v<T, std::int64_t>);
    if (!range.empty()) meta += " Range: " + range + ".";
  }
  if (field.choices.size() > 0) {
    meta += std::is_same_v<T, std::string> ? " One of: " : " Each one of: ";
    bool first = true;
    for (std::string_view choice : field.choices) {
      meta += (first ? "" : ", ") + toml_value(choice);
      first = false;
    }
    meta += ".";
  }
  return meta;
}

// " # 4 GiB" after a byte count that is a whole number of KiB, MiB, GiB or TiB.
std::string size_note(const FieldInfo& field, std::int64_t value) {
  if (field.unit != "bytes" || value <= 0) return {};
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  std::string note;
  std::int64_t v = value;
  for (const char* unit : units) {
    if (v % 1024 != 0) break;
    v /= 1024;
    note = "  # " + std::to_string(v) + " " + unit;
  }
  return note;
}

// Writes each field as its documentation followed by `key = value` (a section), or as a commented
// `# key = value` followed by indented documentation (the node key reference).
class FieldWriter {
 public:
  FieldWriter(std::string& out, bool reference) : out_(out), reference_(reference) {}

  template <class T>
  void operator()(const FieldInfo& field, T& value) {
    std::string assignment = std::string(field.key) + " = " + toml_value(value);
    if constexpr (std::is_same_v<T, std::int64_t>) assignment += size_note(field, value);
    if (reference_) {
      out_ += "# " + assignment + "\n";
      append_comment(out_, "#     ", field.doc);
      append_comment(out_, "#     ", meta_text<T>(field));
      out_ += "#\n";
    } else {
      append_comment(out_, "# ", field.doc);
      append_comment(out_, "# ", meta_text<T>(field));
      out_ += assignment + "\n\n";
    }
  }

 private:
  std::string& out_;
  bool reference_;
};

// Writes the keys of one [[nodes]] table that carry information.
class NodeValueWriter {
 public:
  NodeValueWriter(std::string& out, const NodeSpec& node) : out_(out), node_(node) {}

  template <class T>
  void operator()(const FieldInfo& field, T& value) {
    if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
      if (value.empty()) return;
    }
    if (field.key == "compile_workers" && !node_.has_role("compile")) return;
    out_ += std::string(field.key) + " = " + toml_value(value) + "\n";
  }

 private:
  std::string& out_;
  const NodeSpec& node_;
};

std::string render(Manifest m, std::string_view what) {
  std::string out;
  append_comment(
      out, "# ",
      "cuda-agent run manifest: every section and option with its "
      "documentation, " +
          std::string(what) +
          ". Keys left out keep their defaults; "
          "relative paths are relative to this file's directory. docs/MANIFEST.md describes "
          "the format and the checks.");
  out += "\n";
  manifest_detail::for_each_section(m, [&](auto& section) {
    out += rule("[" + std::string(section.kSection) + "]");
    append_comment(out, "# ", section.kDoc);
    out += "[" + std::string(section.kSection) + "]\n\n";
    FieldWriter writer(out, false);
    section.visit(writer);
  });

  out += rule("[[nodes]]");
  append_comment(out, "# ",
                 "One [[nodes]] table per machine: its GPUs and the roles it runs. "
                 "Exactly one node has the role 'coordinator'. The keys of a node, with example "
                 "values:");
  out += "#\n";
  NodeSpec example{.host = "gpu01",
                   .gpus = 8,
                   .roles = {"learner", "rollout"},
                   .learner_gpus = {0, 1, 2, 3},
                   .rollout_gpus = {4, 5, 6, 7},
                   .compile_workers = 1};
  FieldWriter reference(out, true);
  example.visit(reference);
  for (NodeSpec& node : m.nodes) {
    out += "\n[[nodes]]\n";
    NodeValueWriter writer(out, node);
    node.visit(writer);
  }
  return out;
}

}  // namespace

std::string render_manifest(const Manifest& m) { return render(m, "set to the run's values"); }

std::string render_defaults() {
  Manifest m;
  m.nodes.push_back(NodeSpec{
      .host = "localhost", .gpus = 0, .roles = {"coordinator", "compile"}, .compile_workers = 1});
  return render(m,
                "set to its default. The one node runs the coordinator and one compile "
                "worker and has no GPUs: add nodes with GPU roles as in examples/");
}

}  // namespace cuda_agent
