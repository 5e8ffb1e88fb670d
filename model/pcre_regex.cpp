#define PCRE2_CODE_UNIT_WIDTH 8
#include "model/pcre_regex.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <mutex>

#include "model/tokenizer_internal.h"

namespace cuda_agent {
namespace {

// Per-thread match data and JIT stack, shared by every pattern (JIT needs only the whole-match
// pair; a too-small ovector still reports the match).
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (context != nullptr && stack != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

std::string pcre_message(int code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  return n < 0 ? "PCRE2 error " + std::to_string(code)
               : std::string(reinterpret_cast<char*>(buffer));
}

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  return 4;
}

std::uint32_t decode_utf8_at(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(s[k]));
  };
  std::uint32_t c = b(i);
  if (c < 0x80) return c;
  if (c < 0xE0) return ((c & 0x1F) << 6) | (b(i + 1) & 0x3F);
  if (c < 0xF0) return ((c & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
  return ((c & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) |
         (b(i + 3) & 0x3F);
}

// Letters (numbers) that PCRE2's Unicode tables do not know but Oniguruma's newer ones do:
// those utf8proc knows (Debian 12: utf8proc 2.8 = Unicode 15.0, PCRE2 10.42 = Unicode 14.0), plus
// two large blocks of letters from later versions (CJK extension I, 15.1; Egyptian hieroglyphs
// extended-A, Ol Onal, 16.0; see below). As class members, e.g. "\x{31350}-\x{323AF}".
struct NewerUnicode {
  std::string letters;
  std::string numbers;
};

std::string ranges_not_in_pcre(const std::vector<std::uint32_t>& points, const char* pcre_class) {
  std::string text;
  for (std::uint32_t c : points) append_utf8(text, c);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre_class), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  std::vector<std::uint32_t> missing;
  if (code != nullptr) {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    std::size_t start = 0;
    while (start < text.size() && pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()),
                                              text.size(), start, 0, data, nullptr) > 0) {
      PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
      missing.push_back(decode_utf8_at(text, ov[0]));
      start = ov[1];
    }
    pcre2_match_data_free(data);
    pcre2_code_free(code);
  }
  std::string out;
  char buf[48];
  for (std::size_t i = 0; i < missing.size();) {
    std::size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1) ++j;
    std::snprintf(buf, sizeof(buf), "\\x{%X}-\\x{%X}", missing[i], missing[j]);
    out += buf;
    i = j + 1;
  }
  return out;
}

const NewerUnicode& newer_unicode() {
  static const NewerUnicode tables = [] {
    std::vector<std::uint32_t> letters, numbers;
    for (std::uint32_t c = 0; c <= 0x10FFFF; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO: letters.push_back(c); break;
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_NO: numbers.push_back(c); break;
        default: break;
      }
    }
    NewerUnicode t;
    t.letters = ranges_not_in_pcre(letters, "[^\\p{L}]");
    t.numbers = ranges_not_in_pcre(numbers, "[^\\p{N}]");
    // Unicode 15.1: CJK extension I. Unicode 16.0: Egyptian hieroglyphs extended-A, Ol Onal
    // letters and digits, Kirat Rai digits (the last two added after check_tokenizer.py found
    // them; other 16.0 scripts such as Garay or Sunuwar are not covered).
    t.letters += "\\x{2EBF0}-\\x{2EE5D}\\x{13460}-\\x{143FA}\\x{1E5D0}-\\x{1E5ED}\\x{1E5F0}";
    t.numbers += "\\x{1E5F1}-\\x{1E5FA}\\x{16D70}-\\x{16D79}";
    return t;
  }();
  return tables;
}

}  // namespace

std::string onig_compatible_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      ++i;
      if ((e == 'p') && i + 3 < p.size() && p[i + 1] == '{' && p[i + 3] == '}' &&
          (p[i + 2] == 'L' || p[i + 2] == 'N')) {
        const NewerUnicode& newer = newer_unicode();
        const std::string& extra = p[i + 2] == 'L' ? newer.letters : newer.numbers;
        std::string member = std::string("\\p{") + p[i + 2] + "}" + extra;
        out += in_class ? member : "[" + member + "]";
        i += 3;
      } else if (e == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (e == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      std::size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

Expected<std::shared_ptr<const PcreRegex>> PcreRegex::compile(std::string_view pattern,
                                                              bool literal,
                                                              std::string_view where) {
  std::shared_ptr<PcreRegex> re(new PcreRegex());
  re->pattern_ = literal ? std::string(pattern) : onig_compatible_pattern(pattern);
  re->where_ = std::string(where);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  std::uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
  if (literal) options |= PCRE2_LITERAL;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re->pattern_.data()), re->pattern_.size(), options,
                    &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return make_error(ErrorCategory::kInvalidInput, "tokenizer.bad_regex",
                      std::string(where) + ": pattern does not compile at offset " +
                          std::to_string(error_offset) + ": " + pcre_message(error_code));
  }
  re->code_ = code;
  // JIT is an optimisation: where it is unavailable the interpreter gives the same matches.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::shared_ptr<const PcreRegex>(std::move(re));
}

PcreRegex::~PcreRegex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Status PcreRegex::find_all(std::string_view text, std::vector<MatchSpan>& out) const {
  ThreadMatchState& state = thread_state();
  if (state.data == nullptr || state.context == nullptr) {
    return make_error(ErrorCategory::kInternal, "tokenizer.regex_failed",
                      where_ + ": PCRE2 could not allocate its match data");
  }
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  while (start < text.size()) {
    int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, state.data,
                         state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return make_error(ErrorCategory::kInternal, "tokenizer.regex_failed",
                        where_ + ": matching a " + std::to_string(text.size()) +
                            "-byte text failed: " + pcre_message(rc));
    }
    PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    std::size_t begin = ovector[0];
    std::size_t end = ovector[1];
    if (end > begin) {
      out.emplace_back(static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end));
      start = end;
    } else {
      // Empty match: the next search starts one character later, as Oniguruma's iterator does.
      start =
          begin + utf8_length(static_cast<unsigned char>(text[begin < text.size() ? begin : 0]));
    }
  }
  return Status::ok();
}

}  // namespace cuda_agent
