// Reading task files and rows, checking them, storing them (see task_import.h).
#include "tasks/task_import.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/clock.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One source waiting for the validator, or a failure found before it.
struct Candidate {
  std::string where;
  std::string suite;
  std::string name;
  std::string data_source;
  std::vector<std::string> declared_ops;
  std::string source;
  std::string failure;  ///< non-empty: rejected before validation
};

// Empty when `s` is UTF-8 text without NUL bytes; else why not.
std::string text_problem(std::string_view s) {
  if (const auto nul = s.find('\0'); nul != std::string_view::npos) {
    return "contains a NUL byte at offset " + std::to_string(nul) + " (binary file?)";
  }
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    bool ok = extra >= 0 && i + static_cast<std::size_t>(extra) < s.size();
    for (int k = 1; ok && k <= extra; ++k) {
      ok = (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) >> 6) == 2;
    }
    if (!ok) return "is not UTF-8 text (bad byte at offset " + std::to_string(i) + ")";
    i += static_cast<std::size_t>(extra) + 1;
  }
  return {};
}

std::string size_text(std::uintmax_t n) {
  if (n < 10 * 1024) return std::to_string(n) + " bytes";
  if (n < 10 * 1024 * 1024) return std::to_string(n / 1024) + " KiB";
  return std::to_string(n / (1024 * 1024)) + " MiB";
}

// Reads a whole file of at most `limit` bytes; else a failure text.
std::string read_file(const fs::path& p, std::int64_t limit, std::string* out) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(p, ec);
  if (ec) return "cannot read: " + ec.message();
  if (size > static_cast<std::uintmax_t>(limit)) {
    return "is " + size_text(size) + ", over the limit of " +
           size_text(static_cast<std::uintmax_t>(limit));
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) return "cannot open for reading";
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return "read failed";
  *out = std::move(ss).str();
  return {};
}

// Checks the text of a source before it goes to the validator.
void precheck(Candidate& c, std::int64_t limit) {
  if (!c.failure.empty()) return;
  if (c.source.empty()) {
    c.failure = "is empty";
  } else if (static_cast<std::int64_t>(c.source.size()) > limit) {
    c.failure = "is " + size_text(c.source.size()) + ", over the limit of " +
                size_text(static_cast<std::uintmax_t>(limit));
  } else if (std::string t = text_problem(c.source); !t.empty()) {
    c.failure = t;
  }
}

// "nn.Conv2d" -> "Conv2d", "torch.relu" -> "relu".
std::string ops_name(const std::vector<std::string>& ops) {
  std::string name;
  for (const std::string& op : ops) {
    const auto dot = op.rfind('.');
    name += (name.empty() ? "" : "_") + (dot == std::string::npos ? op : op.substr(dot + 1));
    if (name.size() > 60) break;
  }
  return name.empty() ? "row" : name;
}

// `ops` as a JSON list, or a string holding one (Python list syntax with single quotes too).
std::vector<std::string> parse_ops(const json& v) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const json& s : v) {
      if (s.is_string()) out.push_back(s.get<std::string>());
    }
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    std::string cur;
    char quote = 0;
    for (char ch : s) {
      if (quote) {
        if (ch == quote) {
          out.push_back(cur);
          cur.clear();
          quote = 0;
        } else {
          cur.push_back(ch);
        }
      } else if (ch == '\'' || ch == '"') {
        quote = ch;
      }
    }
    if (out.empty() && !s.empty() && s.front() != '[') out.push_back(s);
  }
  return out;
}

void read_jsonl(const fs::path& p, const std::string& where_base, const std::string& suite,
                const ImportOptions& o, std::vector<Candidate>& out) {
  std::string text;
  if (std::string why = read_file(p, o.max_jsonl_bytes, &text); !why.empty()) {
    out.push_back({.where = where_base, .failure = why});
    return;
  }
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Candidate c{.where = where_base + ":" + std::to_string(line_no), .suite = suite};
    json row = json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object()) {
      c.failure = "is not a JSON object";
    } else if (!row.contains("code") || !row["code"].is_string()) {
      c.failure = "has no string field \"code\"";
    } else {
      c.source = row["code"].get<std::string>();
      if (row.contains("ops")) c.declared_ops = parse_ops(row["ops"]);
      c.data_source = row.contains("data_source") && row["data_source"].is_string()
                          ? row["data_source"].get<std::string>()
                          : "ops6k";
      c.name = ops_name(c.declared_ops);
      precheck(c, o.max_file_bytes);
    }
    out.push_back(std::move(c));
  }
}

void read_py(const fs::path& p, const std::string& where, const std::string& suite,
             const ImportOptions& o, std::vector<Candidate>& out) {
  Candidate c{
      .where = where, .suite = suite, .name = p.stem().string(), .data_source = o.data_source};
  c.failure = read_file(p, o.max_file_bytes, &c.source);
  precheck(c, o.max_file_bytes);
  out.push_back(std::move(c));
}

bool hidden(const fs::path& rel) {
  for (const fs::path& part : rel) {
    const std::string s = part.string();
    if (!s.empty() && s[0] == '.' && s != "." && s != "..") return true;
  }
  return false;
}

}  // namespace

Expected<ImportReport> load_tasks(const std::string& path, const ImportOptions& o,
                                  const std::function<void(bool ok)>& progress) {
  std::error_code ec;
  const fs::path root(path);
  const fs::file_status st = fs::status(root, ec);
  if (ec || !fs::exists(st)) {
    return make_error(ErrorCategory::kNotFound, "task.import_path",
                      "cannot import " + path + ": no such file or directory");
  }
  std::string suite = o.suite;
  if (suite.empty()) {
    fs::path base = fs::absolute(root, ec).lexically_normal();
    if (!base.has_filename()) base = base.parent_path();
    suite = base.filename().string();
    if (base.extension() == ".jsonl") suite = base.stem().string();
  }
  std::vector<Candidate> candidates;
  if (fs::is_directory(st)) {
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path rel = it->path().lexically_relative(root);
      if (hidden(rel)) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      const std::string ext = it->path().extension().string();
      if ((ext == ".py" || ext == ".jsonl") && !it->is_directory()) files.push_back(it->path());
    }
    if (ec) {
      return make_error(ErrorCategory::kIo, "task.import_path",
                        "cannot list " + path + ": " + ec.message());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const fs::path rel = f.lexically_relative(root);
      std::string sub = rel.parent_path().generic_string();
      const std::string file_suite = sub.empty() ? suite : suite + "/" + sub;
      if (f.extension() == ".py") {
        read_py(f, f.string(), file_suite, o, candidates);
      } else {
        read_jsonl(f, f.string(), file_suite, o, candidates);
      }
    }
  } else if (root.extension() == ".jsonl") {
    read_jsonl(root, path, suite, o, candidates);
  } else {
    read_py(root, path, suite, o, candidates);
  }

  ImportReport report;
  report.candidates = candidates.size();
  std::vector<SourceToCheck> sources;
  std::vector<std::size_t> index;  // sources[i] is candidates[index[i]]
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!candidates[i].failure.empty()) continue;
    sources.push_back({.name = candidates[i].where, .source = candidates[i].source});
    index.push_back(i);
  }
  for (const Candidate& c : candidates) {
    if (!c.failure.empty() && progress) progress(false);
  }
  ASSIGN_OR_RETURN(auto reports, PythonValidator(o.validator).check(sources, progress));
  std::vector<std::string> failure_of(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) failure_of[i] = candidates[i].failure;
  std::map<std::size_t, const StaticReport*> report_of;
  for (std::size_t k = 0; k < reports.size(); ++k) {
    const StaticReport& r = reports[k];
    if (!r.ok) {
      std::string why;
      for (const std::string& e : r.errors) why += (why.empty() ? "" : "; ") + e;
      failure_of[index[k]] = why;
    } else {
      report_of[index[k]] = &r;
    }
  }
  const std::int64_t now = now_unix_ms();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Candidate& c = candidates[i];
    if (!failure_of[i].empty()) {
      report.failures.push_back({.where = c.where, .reason = failure_of[i]});
      continue;
    }
    Task t = task_from_source(c.suite, c.name, std::move(c.source), *report_of[i], c.data_source,
                              c.where, now);
    t.declared_ops = std::move(c.declared_ops);
    if (!seen.insert(t.id.value()).second) {
      ++report.duplicates;
      continue;
    }
    report.tasks.push_back(std::move(t));
  }
  return report;
}

Expected<SaveCounts> save_tasks(RunStore& store, const std::vector<Task>& tasks) {
  SaveCounts counts;
  constexpr std::size_t kBatch = 256;
  StoreWrite batch;
  auto flush = [&]() -> Status {
    if (batch.tasks.empty()) return Status::ok();
    counts.imported += batch.tasks.size();
    Status s = store.write(std::move(batch), std::chrono::seconds(60));
    batch = StoreWrite{};
    return s;
  };
  const std::int64_t now = now_unix_ms();
  for (const Task& t : tasks) {
    auto existing = store.get_task(t.id);
    if (existing) {
      if (existing->content_hash != t.content_hash) {
        return make_error(ErrorCategory::kInvalidInput, "task.conflict",
                          "task " + t.id.value() + " is in the store " + store.dir() +
                              " with another content hash (" + existing->content_hash + " vs " +
                              t.content_hash + ")");
      }
      ++counts.unchanged;
      continue;
    }
    if (existing.error().category != ErrorCategory::kNotFound) return existing.error();
    batch.tasks.push_back(to_record(t, now));
    if (batch.tasks.size() >= kBatch) RETURN_IF_ERROR(flush());
  }
  RETURN_IF_ERROR(flush());
  return counts;
}

}  // namespace cuda_agent
