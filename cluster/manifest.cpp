// Loading a manifest: toml++ parse, then three passes, each reporting all it finds before the next
// runs (so one mistake does not cascade): (1) shape: sections, keys, types, ranges, choices;
// (2) meaning: run rules, [security] completeness, nodes, roles and GPUs; (3) key files.
#include "cluster/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "actors/curve_keys.h"
#include "cluster/manifest_internal.h"

namespace cuda_agent {

using manifest_detail::Diagnostics;
using manifest_detail::TableReader;
using manifest_detail::Where;
using manifest_detail::where_of;

namespace {

std::vector<std::string_view> known_top_level_names() {
  std::vector<std::string_view> names;
  Manifest defaults;
  manifest_detail::for_each_section(
      defaults, [&](const auto& section) { names.push_back(section.kSection); });
  names.push_back("nodes");
  return names;
}

void check_top_level(const toml::table& root, Diagnostics& diag) {
  std::vector<std::string_view> names = known_top_level_names();
  for (auto&& [key, node] : root) {
    std::string context = "[" + std::string(key.str()) + "]";
    if (key.str() == "nodes") continue;  // read_nodes checks its shape
    if (std::find(names.begin(), names.end(), key.str()) == names.end()) {
      diag.add("manifest.unknown_section", where_of(key.source()), context,
               "unknown section" + manifest_detail::did_you_mean(key.str(), names));
    } else if (!node.is_table()) {
      diag.add("manifest.wrong_type", where_of(key.source()), context,
               "expected a section (table), got " + std::string(manifest_detail::type_name(node)));
    }
  }
}

template <class Options>
TableReader read_section(const toml::table& root, Options& options, Diagnostics& diag) {
  const toml::node* node = root.get(Options::kSection);
  const toml::table* table = node != nullptr ? node->as_table() : nullptr;
  TableReader reader(table, "[" + std::string(Options::kSection) + "]", &diag);
  options.visit(reader);
  reader.report_unknown_keys();
  return reader;
}

void check_learner(const LearnerOptions& learner, const TableReader& reader, Diagnostics& diag) {
  if (learner.advantage == "group" && learner.group_size < 2)
    diag.add("manifest.invalid_value", reader.key_where("group_size"), reader.context("group_size"),
             std::to_string(learner.group_size) +
                 ": advantage = \"group\" compares the episodes of one task, so group_size must "
                 "be at least 2");
}

void check_run(const RunOptions& run, const TableReader& reader, Diagnostics& diag) {
  bool name_ok = !run.name.empty() && std::all_of(run.name.begin(), run.name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
  if (run.name == "." || run.name == "..") name_ok = false;  // it names directories
  if (!name_ok) {
    diag.add("manifest.invalid_value", reader.key_where("name"), reader.context("name"),
             manifest_detail::toml_value(run.name) +
                 " is not a valid run id: use letters, digits, '_', '.' and '-' (not '.' or '..')");
  }
  if (run.heartbeat_timeout_ms <= run.heartbeat_interval_ms) {
    diag.add("manifest.invalid_value", reader.key_where("heartbeat_timeout_ms"),
             reader.context("heartbeat_timeout_ms"),
             std::to_string(run.heartbeat_timeout_ms) +
                 " must be longer than heartbeat_interval_ms (" +
                 std::to_string(run.heartbeat_interval_ms) + ")");
  }
}

struct KeyFileField {
  std::string_view key;
  const std::string* as_written;
  const std::filesystem::path* resolved;
  bool secret;
};

std::vector<KeyFileField> key_file_fields(const Manifest& m) {
  return {{"server_secret_key_file", &m.security.server_secret_key_file,
           &m.paths.server_secret_key_file, true},
          {"client_secret_key_file", &m.security.client_secret_key_file,
           &m.paths.client_secret_key_file, true},
          {"server_public_key_file", &m.security.server_public_key_file,
           &m.paths.server_public_key_file, false}};
}

void check_security_complete(const Manifest& m, const TableReader& reader, Diagnostics& diag) {
  std::vector<KeyFileField> fields = key_file_fields(m);
  std::string given;
  for (const KeyFileField& f : fields) {
    if (!f.as_written->empty()) given += (given.empty() ? "" : ", ") + std::string(f.key);
  }
  if (given.empty() || m.security.enabled()) return;
  for (const KeyFileField& f : fields) {
    if (!f.as_written->empty()) continue;
    diag.add("manifest.partial_security", reader.table_where(), reader.context(f.key),
             "missing: name all three key files or none (given: " + given + ")");
  }
}

void check_key_files(const Manifest& m, const TableReader& reader, Diagnostics& diag) {
  if (!m.security.enabled()) return;
  std::vector<std::string> publics;
  for (const KeyFileField& f : key_file_fields(m)) {
    Where where = reader.key_where(f.key);
    std::string context = reader.context(f.key);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*f.resolved, ec)) {
      diag.add("manifest.missing_file", where, context,
               "key file " + f.resolved->string() +
                   " does not exist; make keys with `cuda-agent keys generate`");
      return;
    }
    Expected<CurveKeyPair> keys = read_curve_key_file(*f.resolved);
    if (!keys) {
      diag.add("manifest.bad_key_file", where, context, "rejected: " + keys.error().message);
      return;
    }
    if (f.secret && keys->secret_z85.empty()) {
      diag.add("manifest.bad_key_file", where, context,
               f.resolved->string() + " holds no secret key; name the NAME.key_secret file");
      return;
    }
    publics.push_back(keys->public_z85);
  }
  if (publics[0] != publics[2]) {
    diag.add("manifest.key_mismatch", reader.key_where("server_public_key_file"),
             reader.context("server_public_key_file"),
             "is not the public half of server_secret_key_file; clients would reject the servers");
  }
}

std::filesystem::path resolve(const std::filesystem::path& base_dir, const std::string& path) {
  if (path.empty()) return {};
  std::filesystem::path p(path);
  return (p.is_absolute() ? p : base_dir / p).lexically_normal();
}

void resolve_paths(Manifest& m) {
  const std::filesystem::path& base = m.base_dir;
  m.paths.store_dir = resolve(base, m.store.dir);
  m.paths.checkpoint_dir = resolve(base, m.run.checkpoint_dir);
  m.paths.train_set = resolve(base, m.tasks.train_set);
  m.paths.eval_set = resolve(base, m.tasks.eval_set);
  m.paths.corpus_dir = m.paths.store_dir.parent_path() / "corpus";
  if (m.corpus.count > 0) {
    m.paths.train_set = m.paths.corpus_dir / "train-tasks";
    m.paths.eval_set = m.paths.corpus_dir / "heldout-tasks";
  }
  m.paths.model_path = resolve(base, m.model.path);
  m.paths.replay_transcripts = resolve(base, m.rollout.replay_transcripts);
  m.paths.server_secret_key_file = resolve(base, m.security.server_secret_key_file);
  m.paths.client_secret_key_file = resolve(base, m.security.client_secret_key_file);
  m.paths.server_public_key_file = resolve(base, m.security.server_public_key_file);
}

}  // namespace

const NodeSpec& Manifest::coordinator() const {
  for (const NodeSpec& node : nodes) {
    if (node.has_role("coordinator")) return node;
  }
  std::abort();  // a validated manifest always has one; reaching here is a programming error
}

Expected<Manifest> parse_manifest(std::string_view toml_text, std::string_view source_name,
                                  const std::filesystem::path& base_dir) {
  Diagnostics diag{std::string(source_name)};
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    diag.add("manifest.syntax", where_of(e.source()), "syntax error", e.description());
    return diag.to_error();
  }

  Manifest m;
  m.file = std::filesystem::path(source_name);
  m.base_dir = base_dir;
  check_top_level(root, diag);
  TableReader run = read_section(root, m.run, diag);
  TableReader security = read_section(root, m.security, diag);
  read_section(root, m.store, diag);
  read_section(root, m.compile, diag);
  read_section(root, m.bench, diag);
  read_section(root, m.rollout, diag);
  TableReader learner = read_section(root, m.learner, diag);
  read_section(root, m.model, diag);
  read_section(root, m.tasks, diag);
  read_section(root, m.corpus, diag);
  std::vector<manifest_detail::NodeSource> nodes = manifest_detail::read_nodes(root, diag, m.nodes);
  if (!diag.empty()) return diag.to_error();

  check_run(m.run, run, diag);
  check_learner(m.learner, learner, diag);
  check_security_complete(m, security, diag);
  manifest_detail::check_nodes(m.run, nodes, m.nodes, diag);
  if (!diag.empty()) return diag.to_error();

  resolve_paths(m);
  check_key_files(m, security, diag);
  if (!diag.empty()) return diag.to_error();
  return m;
}

Expected<Manifest> load_manifest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return make_error(ErrorCategory::kNotFound, "manifest.not_found",
                      file.string() + ": cannot open the manifest: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return make_error(ErrorCategory::kIo, "manifest.read_failed",
                      file.string() + ": cannot read the manifest: " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  std::filesystem::path base_dir = (ec ? file : absolute).parent_path().lexically_normal();
  Expected<Manifest> m = parse_manifest(text.str(), file.string(), base_dir);
  if (m) m->file = file;
  return m;
}

}  // namespace cuda_agent
