// Reading option fields from toml++ tables, collecting problems, and the TOML text of values.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "cluster/manifest_internal.h"
#include "core/escape.h"

namespace cuda_agent::manifest_detail {
namespace {

constexpr std::size_t kMaxProblemsShown = 20;

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string number_text(double value, bool integer) {
  if (integer) return std::to_string(static_cast<long long>(value));
  return toml_value(value);
}

std::string choices_text(const FieldInfo& field) {
  std::string out;
  for (std::string_view choice : field.choices) {
    if (!out.empty()) out += ", ";
    out += toml_value(choice);
  }
  return out;
}

}  // namespace

Where where_of(const toml::source_region& region) {
  return {static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
}

void Diagnostics::add(std::string code, Where where, std::string_view context,
                      std::string_view what) {
  std::string text = file_;
  if (where.line > 0) {
    text += ':' + std::to_string(where.line);
    if (where.column > 0) text += ':' + std::to_string(where.column);
  }
  text += ": ";
  text += context;
  text += ": ";
  text += what;
  problems_.push_back({std::move(code), where, std::move(text)});
}

Error Diagnostics::to_error() const {
  std::vector<const Problem*> sorted;
  for (const Problem& p : problems_) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Problem* a, const Problem* b) {
    return std::make_tuple(a->where.line == 0, a->where.line, a->where.column) <
           std::make_tuple(b->where.line == 0, b->where.line, b->where.column);
  });
  std::string message;
  for (std::size_t i = 0; i < sorted.size() && i < kMaxProblemsShown; ++i) {
    if (i > 0) message += '\n';
    message += sorted[i]->text;
  }
  if (sorted.size() > kMaxProblemsShown) {
    message += "\n(and " + std::to_string(sorted.size() - kMaxProblemsShown) + " more problems)";
  }
  return make_error(ErrorCategory::kInvalidInput, sorted.front()->code, std::move(message));
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates,
                         char quote) {
  std::string_view best;
  std::size_t best_distance = 3;
  for (std::string_view candidate : candidates) {
    std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  if (best.empty()) return {};
  return std::string(" (did you mean ") + quote + std::string(best) + quote + "?)";
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string toml_value(bool value) { return value ? "true" : "false"; }

std::string toml_value(std::int64_t value) { return std::to_string(value); }

std::string toml_value(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  std::string out(buf, end);
  if (out.find_first_of(".eni") == std::string::npos) out += ".0";
  return out;
}

std::string toml_value(std::string_view value) {
  std::string out = "\"";
  append_escaped(out, value);
  return out + '"';
}

std::string toml_value(const std::vector<std::string>& value) {
  std::string out = "[";
  for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + toml_value(value[i]);
  return out + ']';
}

std::string toml_value(const std::vector<std::int64_t>& value) {
  std::string out = "[";
  for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + toml_value(value[i]);
  return out + ']';
}

std::string range_text(const FieldInfo& field, bool integer) {
  bool has_min = std::isfinite(field.min);
  bool has_max = std::isfinite(field.max);
  if (has_min && has_max) {
    return number_text(field.min, integer) + " to " + number_text(field.max, integer);
  }
  if (has_min) return "at least " + number_text(field.min, integer);
  if (has_max) return "at most " + number_text(field.max, integer);
  return {};
}

TableReader::TableReader(const toml::table* table, std::string context, Diagnostics* diag)
    : table_(table), context_(std::move(context)), diag_(diag) {
  if (table_ != nullptr) table_where_ = where_of(table_->source());
}

std::string TableReader::context(std::string_view key) const {
  return context_ + " '" + std::string(key) + "'";
}

Where TableReader::key_where(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? table_where_ : it->second;
}

Where TableReader::element_where(std::string_view key, std::size_t index) const {
  auto it = elements_.find(key);
  if (it == elements_.end() || index >= it->second.size()) return key_where(key);
  return it->second[index];
}

const toml::node* TableReader::find(const FieldInfo& field) {
  known_.push_back(field.key);
  if (table_ == nullptr) return nullptr;
  auto it = table_->find(field.key);
  if (it == table_->end()) return nullptr;
  keys_.emplace(std::string(field.key), where_of(it->first.source()));
  return &it->second;
}

void TableReader::problem(std::string code, Where where, const FieldInfo& field,
                          std::string_view what) {
  diag_->add(std::move(code), where, context(field.key), what);
}

bool TableReader::check_range(const FieldInfo& field, Where where, double value, bool integer) {
  if (value >= field.min && value <= field.max) return true;
  problem("manifest.out_of_range", where, field,
          number_text(value, integer) + " is out of range (" + range_text(field, integer) + ")");
  return false;
}

bool TableReader::check_choice(const FieldInfo& field, Where where, std::string_view value) {
  if (field.choices.size() == 0) return true;
  std::vector<std::string_view> choices(field.choices.begin(), field.choices.end());
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return true;
  problem("manifest.invalid_choice", where, field,
          toml_value(value) + " is not one of " + choices_text(field) +
              did_you_mean(value, choices, '"'));
  return false;
}

void TableReader::operator()(const FieldInfo& field, bool& out) {
  const toml::node* node = find(field);
  if (node == nullptr) return;
  if (!node->is_boolean()) {
    problem("manifest.wrong_type", key_where(field.key), field,
            "expected a boolean (true or false), got " + std::string(type_name(*node)));
    return;
  }
  out = node->as_boolean()->get();
}

void TableReader::operator()(const FieldInfo& field, std::int64_t& out) {
  const toml::node* node = find(field);
  if (node == nullptr) return;
  if (!node->is_integer()) {
    problem("manifest.wrong_type", key_where(field.key), field,
            "expected an integer, got " + std::string(type_name(*node)));
    return;
  }
  std::int64_t value = node->as_integer()->get();
  if (check_range(field, key_where(field.key), static_cast<double>(value), true)) out = value;
}

void TableReader::operator()(const FieldInfo& field, double& out) {
  const toml::node* node = find(field);
  if (node == nullptr) return;
  double value = 0;
  if (node->is_floating_point()) {
    value = node->as_floating_point()->get();
  } else if (node->is_integer()) {
    value = static_cast<double>(node->as_integer()->get());
  } else {
    problem("manifest.wrong_type", key_where(field.key), field,
            "expected a number, got " + std::string(type_name(*node)));
    return;
  }
  if (check_range(field, key_where(field.key), value, false)) out = value;
}

void TableReader::operator()(const FieldInfo& field, std::string& out) {
  const toml::node* node = find(field);
  if (node == nullptr) return;
  if (!node->is_string()) {
    problem("manifest.wrong_type", key_where(field.key), field,
            "expected a string, got " + std::string(type_name(*node)));
    return;
  }
  const std::string& value = node->as_string()->get();
  if (check_choice(field, key_where(field.key), value)) out = value;
}

void TableReader::operator()(const FieldInfo& field, std::vector<std::string>& out) {
  const toml::node* node = find(field);
  if (node == nullptr) return;
  if (!node->is_array()) {
    problem("manifest.wrong_type", key_where(field.key), field,
            "expected an array of strings, got " + std::string(type_name(*node)));
    return;
  }
  std::vector<Where>& where = elements_[std::string(field.key)];
  std::vector<std::string> values;
  bool ok = true;
  for (const toml::node& element : *node->as_array()) {
    where.push_back(where_of(element.source()));
    if (!element.is_string()) {
      problem("manifest.wrong_type", where.back(), field,
              "expected an array of strings, found " + std::string(type_name(element)));
      ok = false;
    } else if (!check_choice(field, where.back(), element.as_string()->get())) {
      ok = false;
    } else {
      values.push_back(element.as_string()->get());
    }
  }
  if (ok) out = std::move(values);
}

void TableReader::operator()(const FieldInfo& field, std::vector<std::int64_t>& out) {
  const toml::node* node = find(field);
  if (node == nullptr) return;
  if (!node->is_array()) {
    problem("manifest.wrong_type", key_where(field.key), field,
            "expected an array of integers, got " + std::string(type_name(*node)));
    return;
  }
  std::vector<Where>& where = elements_[std::string(field.key)];
  std::vector<std::int64_t> values;
  bool ok = true;
  for (const toml::node& element : *node->as_array()) {
    where.push_back(where_of(element.source()));
    if (!element.is_integer()) {
      problem("manifest.wrong_type", where.back(), field,
              "expected an array of integers, found " + std::string(type_name(element)));
      ok = false;
    } else if (!check_range(field, where.back(), static_cast<double>(element.as_integer()->get()),
                            true)) {
      ok = false;
    } else {
      values.push_back(element.as_integer()->get());
    }
  }
  if (ok) out = std::move(values);
}

void TableReader::report_unknown_keys() {
  if (table_ == nullptr) return;
  for (auto&& [key, node] : *table_) {
    if (std::find(known_.begin(), known_.end(), key.str()) != known_.end()) continue;
    diag_->add("manifest.unknown_key", where_of(key.source()), context(key.str()),
               "unknown key" + did_you_mean(key.str(), known_));
  }
}

}  // namespace cuda_agent::manifest_detail
