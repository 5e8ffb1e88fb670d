// A small Python tokenizer and the fingerprints built on it (see code_similarity.h).
#include "tasks/code_similarity.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <unordered_set>

namespace cuda_agent {
namespace {

enum class Kind { kName, kNumber, kString, kOp, kNewline, kIndent, kDedent };

struct Token {
  Kind kind;
  std::string text;
};

bool name_start(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool name_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// Length of a string literal starting at `i` (at its quote), or the rest on an unterminated one.
std::size_t string_end(std::string_view s, std::size_t i) {
  const char q = s[i];
  const bool triple = i + 2 < s.size() && s[i + 1] == q && s[i + 2] == q;
  std::size_t j = i + (triple ? 3 : 1);
  while (j < s.size()) {
    if (s[j] == '\\') {
      j += 2;
      continue;
    }
    if (!triple && s[j] == '\n') return j;  // unterminated: ends at the line
    if (s[j] == q && (!triple || (j + 2 < s.size() && s[j + 1] == q && s[j + 2] == q)))
      return j + (triple ? 3 : 1);
    ++j;
  }
  return s.size();
}

std::vector<Token> tokenize(std::string_view s) {
  static const std::array<std::string_view, 22> kOps = {
      "**=", "//=", ">>=", "<<=", "...", "->", "**", "//", "==", "!=", "<=",
      ">=",  "<<",  ">>",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", ":="};
  std::vector<Token> out;
  std::vector<std::size_t> indents = {0};
  int depth = 0;
  bool line_start = true;
  std::size_t i = 0;
  auto newline = [&] {
    if (!out.empty() && out.back().kind != Kind::kNewline && out.back().kind != Kind::kIndent &&
        out.back().kind != Kind::kDedent)
      out.push_back({Kind::kNewline, "NL"});
  };
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (line_start && depth == 0) {
      std::size_t col = 0, j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) col += s[j++] == '\t' ? 8 : 1;
      if (j >= s.size() || s[j] == '\n' || s[j] == '#' || s[j] == '\r') {  // blank or comment
        while (j < s.size() && s[j] != '\n') ++j;
        i = j + 1;
        continue;
      }
      if (col > indents.back()) {
        indents.push_back(col);
        out.push_back({Kind::kIndent, "IN"});
      }
      while (col < indents.back()) {
        indents.pop_back();
        out.push_back({Kind::kDedent, "DE"});
      }
      line_start = false;
      i = j;
      continue;
    }
    if (c == '\n') {
      if (depth == 0) {
        newline();
        line_start = true;
      }
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      ++i;
    } else if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      i += 2;
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const std::size_t e = string_end(s, i);
      out.push_back({Kind::kString, std::string(s.substr(i, e - i))});
      i = e;
    } else if (name_start(c)) {
      std::size_t j = i;
      while (j < s.size() && name_char(static_cast<unsigned char>(s[j]))) ++j;
      // A string prefix (r, b, f, u, rb, ...) directly before a quote.
      if (j < s.size() && (s[j] == '"' || s[j] == '\'') && j - i <= 2) {
        const std::size_t e = string_end(s, j);
        out.push_back({Kind::kString, std::string(s.substr(i, e - i))});
        i = e;
        continue;
      }
      out.push_back({Kind::kName, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isdigit(c) || (c == '.' && i + 1 < s.size() &&
                                   std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      std::size_t j = i;
      while (j < s.size()) {
        const unsigned char d = static_cast<unsigned char>(s[j]);
        if (std::isalnum(d) || d == '_' || d == '.') {
          ++j;
        } else if ((d == '+' || d == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') &&
                   !(s[i] == '0' && j > i + 1 && (s[i + 1] == 'x' || s[i + 1] == 'X'))) {
          ++j;
        } else {
          break;
        }
      }
      out.push_back({Kind::kNumber, std::string(s.substr(i, j - i))});
      i = j;
    } else {
      std::string op(1, static_cast<char>(c));
      for (std::string_view m : kOps) {
        if (s.substr(i, m.size()) == m) {
          op = std::string(m);
          break;
        }
      }
      if (op == "(" || op == "[" || op == "{") ++depth;
      if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
      out.push_back({Kind::kOp, op});
      i += op.size();
    }
  }
  newline();
  // No-op string statements (docstrings): strings at a statement's start, ending it.
  std::vector<Token> kept;
  for (std::size_t k = 0; k < out.size(); ++k) {
    const bool starts = kept.empty() || kept.back().kind == Kind::kNewline ||
                        kept.back().kind == Kind::kIndent || kept.back().kind == Kind::kDedent;
    if (starts && out[k].kind == Kind::kString) {
      std::size_t e = k;
      while (e < out.size() && out[e].kind == Kind::kString) ++e;
      if (e == out.size() || out[e].kind == Kind::kNewline) {
        k = e;  // skip the strings and their newline
        continue;
      }
    }
    kept.push_back(std::move(out[k]));
  }
  return kept;
}

bool kept_name(const std::string& n) {
  static const std::unordered_set<std::string> kKeep = {
      // keywords
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
      "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
      "while", "with", "yield",
      // modules and the aliases tasks use for them, and builtins
      "torch", "nn", "F", "functional", "math", "numpy", "np", "self", "super", "range", "len",
      "int", "float", "bool", "list", "tuple", "dict", "min", "max", "sum", "abs", "print",
      "isinstance", "getattr", "setattr", "enumerate", "zip", "Model", "forward", "__init__",
      "get_inputs", "get_init_inputs"};
  return kKeep.count(n) > 0;
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 14695981039346656037ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

constexpr std::size_t kShingle = 4;

}  // namespace

std::vector<std::string> structure_tokens(std::string_view source) {
  std::vector<Token> tokens = tokenize(source);
  std::vector<std::string> out;
  out.reserve(tokens.size());
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    switch (t.kind) {
      case Kind::kName: {
        const bool attribute =
            k > 0 && tokens[k - 1].kind == Kind::kOp && tokens[k - 1].text == ".";
        out.push_back(attribute || kept_name(t.text) ? t.text : "ID");
        break;
      }
      case Kind::kNumber: out.push_back("NUM"); break;
      case Kind::kString: out.push_back("STR"); break;
      default: out.push_back(t.text); break;
    }
  }
  return out;
}

CodeFingerprint fingerprint_code(std::string_view source) {
  CodeFingerprint f;
  for (const Token& t : tokenize(source)) {
    if (!f.normalized.empty()) f.normalized += ' ';
    f.normalized += t.text;
  }
  const std::vector<std::string> s = structure_tokens(source);
  if (s.size() < kShingle) {
    if (!s.empty()) {
      std::uint64_t h = fnv1a("");
      for (const auto& t : s) h = fnv1a(t + "\x1f", h);
      f.shingles.push_back(h);
    }
    return f;
  }
  f.shingles.reserve(s.size());
  for (std::size_t i = 0; i + kShingle <= s.size(); ++i) {
    std::uint64_t h = fnv1a("");
    for (std::size_t j = i; j < i + kShingle; ++j) h = fnv1a(s[j] + "\x1f", h);
    f.shingles.push_back(h);
  }
  std::sort(f.shingles.begin(), f.shingles.end());
  f.shingles.erase(std::unique(f.shingles.begin(), f.shingles.end()), f.shingles.end());
  return f;
}

double structure_similarity(const CodeFingerprint& a, const CodeFingerprint& b) {
  const auto& x = a.shingles;
  const auto& y = b.shingles;
  if (x.empty() && y.empty()) return 1.0;
  std::size_t i = 0, j = 0, both = 0;
  while (i < x.size() && j < y.size()) {
    if (x[i] < y[j]) {
      ++i;
    } else if (y[j] < x[i]) {
      ++j;
    } else {
      ++both;
      ++i;
      ++j;
    }
  }
  return static_cast<double>(both) / static_cast<double>(x.size() + y.size() - both);
}

std::vector<std::optional<DuplicateOf>> find_duplicates(
    const std::vector<std::string>& content_hashes, const std::vector<CodeFingerprint>& prints) {
  std::vector<std::optional<DuplicateOf>> out(prints.size());
  std::map<std::string, std::size_t> by_hash, by_code;
  for (std::size_t i = 0; i < prints.size(); ++i) {
    const std::string& hash = i < content_hashes.size() ? content_hashes[i] : std::string();
    if (auto it = by_hash.find(hash); !hash.empty() && it != by_hash.end()) {
      out[i] = DuplicateOf{it->second, "same content hash"};
      continue;
    }
    if (auto it = by_code.find(prints[i].normalized); it != by_code.end()) {
      out[i] = DuplicateOf{it->second, "same code after normalization"};
      continue;
    }
    if (!hash.empty()) by_hash.emplace(hash, i);
    by_code.emplace(prints[i].normalized, i);
  }
  return out;
}

std::vector<std::optional<ContaminatedBy>> find_contaminated(
    const std::vector<CodeFingerprint>& train, const std::vector<CodeFingerprint>& eval,
    double threshold) {
  std::vector<std::optional<ContaminatedBy>> out(train.size());
  for (std::size_t i = 0; i < train.size(); ++i) {
    const double n = static_cast<double>(train[i].shingles.size());
    for (std::size_t j = 0; j < eval.size(); ++j) {
      const double m = static_cast<double>(eval[j].shingles.size());
      // |A n B| / |A u B| <= min / max: skip pairs that cannot reach the threshold.
      if (std::max(n, m) > 0 && std::min(n, m) / std::max(n, m) < threshold) continue;
      const double sim = structure_similarity(train[i], eval[j]);
      if (sim >= threshold && (!out[i] || sim > out[i]->similarity))
        out[i] = ContaminatedBy{j, sim};
    }
  }
  return out;
}

}  // namespace cuda_agent
