// Reading tokenizer.json into TokenizerData: every field this tokenizer implements is checked
// here, and everything else is refused with the file and the JSON path.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include <filesystem>

#include "model/tokenizer_internal.h"

namespace cuda_agent {
namespace {

using nlohmann::json;

// The ByteLevel pre-tokenizer's own regex (GPT-2), used when its `use_regex` is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Loader {
 public:
  explicit Loader(std::string origin) : origin_(std::move(origin)) {}

  Error malformed(const std::string& path, const std::string& what) const {
    return make_error(ErrorCategory::kInvalidInput, "tokenizer.malformed",
                      origin_ + ": " + path + ": " + what);
  }
  Error unsupported(const std::string& path, const std::string& what) const {
    return make_error(ErrorCategory::kInvalidInput, "tokenizer.unsupported",
                      origin_ + ": " + path + ": " + what);
  }

  // A boolean field that may be absent or null (then `fallback`).
  Expected<bool> flag(const json& obj, const std::string& path, const char* key,
                      bool fallback) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return malformed(path + "." + key, "expected true or false");
    return it->get<bool>();
  }

  Expected<std::string> type_of(const json& obj, const std::string& path) const {
    if (!obj.is_object()) return malformed(path, "expected an object");
    auto it = obj.find("type");
    if (it == obj.end() || !it->is_string()) return malformed(path + ".type", "missing");
    return it->get<std::string>();
  }

  Status load_model(const json& root, TokenizerData& d) const {
    auto it = root.find("model");
    if (it == root.end() || it->is_null()) return malformed("model", "missing");
    const json& m = *it;
    ASSIGN_OR_RETURN(std::string type, type_of(m, "model"));
    if (type != "BPE") return unsupported("model.type", "'" + type + "' (only BPE)");
    if (auto dr = m.find("dropout");
        dr != m.end() && !dr->is_null() && !(dr->is_number() && dr->get<double>() == 0.0)) {
      return unsupported("model.dropout", "BPE dropout");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      auto f = m.find(key);
      if (f != m.end() && !f->is_null() && !(f->is_string() && f->get<std::string>().empty()))
        return unsupported(std::string("model.") + key, "must be null or empty");
    }
    ASSIGN_OR_RETURN(bool byte_fallback, flag(m, "model", "byte_fallback", false));
    if (byte_fallback) return unsupported("model.byte_fallback", "byte fallback (SentencePiece)");
    ASSIGN_OR_RETURN(d.ignore_merges, flag(m, "model", "ignore_merges", false));

    auto vocab = m.find("vocab");
    if (vocab == m.end() || !vocab->is_object())
      return malformed("model.vocab", "missing or not an object");
    std::string raw;
    d.id_by_spelling.reserve(vocab->size() + 1024);
    d.vocab_by_bytes.reserve(vocab->size());
    for (auto v = vocab->begin(); v != vocab->end(); ++v) {
      if (!v->is_number_unsigned() || v->get<std::uint64_t>() > 0x7fffffffULL)
        return malformed("model.vocab[\"" + v.key() + "\"]", "id is not a non-negative integer");
      TokenId id = v->get<TokenId>();
      set_id(d, id, v.key(), 0);
      if (byte_level_bytes(v.key(), raw)) d.vocab_by_bytes.emplace(raw, id);
    }
    for (int b = 0; b < 256; ++b) {
      auto f = d.vocab_by_bytes.find(std::string(1, static_cast<char>(b)));
      if (f == d.vocab_by_bytes.end()) {
        return unsupported("model.vocab", "no entry for byte " + std::to_string(b) + " ('" +
                                              byte_level_spelling(std::string(1, char(b))) +
                                              "'): every byte needs one in a byte-level BPE");
      }
      d.byte_ids[b] = f->second;
    }

    auto merges = m.find("merges");
    if (merges == m.end() || !merges->is_array())
      return malformed("model.merges", "missing or not an array");
    d.merges.reserve(merges->size());
    for (std::size_t rank = 0; rank < merges->size(); ++rank) {
      const json& e = (*merges)[rank];
      const std::string path = "model.merges[" + std::to_string(rank) + "]";
      std::string left, right;
      if (e.is_string()) {
        const std::string& s = e.get_ref<const std::string&>();
        std::size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
          return malformed(path, "'" + s + "' is not two tokens separated by one space");
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        left = e[0].get<std::string>();
        right = e[1].get<std::string>();
      } else {
        return malformed(path, "expected \"a b\" or [\"a\", \"b\"]");
      }
      TokenId ids[3];
      const std::string names[3] = {left, right, left + right};
      for (int k = 0; k < 3; ++k) {
        auto found = d.id_by_spelling.find(names[k]);
        if (found == d.id_by_spelling.end())
          return malformed(path, "'" + names[k] + "' is not in model.vocab");
        ids[k] = found->second;
      }
      std::uint64_t key = (std::uint64_t{ids[0]} << 32) | ids[1];
      d.merges.emplace(key, TokenizerData::Merge{static_cast<std::uint32_t>(rank), ids[2]});
    }
    return Status::ok();
  }

  Status load_added(const json& root, TokenizerData& d) const {
    auto it = root.find("added_tokens");
    if (it == root.end() || it->is_null()) return Status::ok();
    if (!it->is_array()) return malformed("added_tokens", "not an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& t = (*it)[i];
      const std::string path = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object()) return malformed(path, "not an object");
      auto id = t.find("id");
      auto content = t.find("content");
      if (id == t.end() || !id->is_number_unsigned() || id->get<std::uint64_t>() > 0x7fffffffULL)
        return malformed(path + ".id", "missing or not a non-negative integer");
      if (content == t.end() || !content->is_string() || content->get<std::string>().empty())
        return malformed(path + ".content", "missing or empty");
      AddedToken a;
      a.id = id->get<TokenId>();
      a.content = content->get<std::string>();
      if (first_invalid_utf8(a.content)) return malformed(path + ".content", "invalid UTF-8");
      ASSIGN_OR_RETURN(a.special, flag(t, path, "special", false));
      ASSIGN_OR_RETURN(a.single_word, flag(t, path, "single_word", false));
      ASSIGN_OR_RETURN(a.lstrip, flag(t, path, "lstrip", false));
      ASSIGN_OR_RETURN(a.rstrip, flag(t, path, "rstrip", false));
      ASSIGN_OR_RETURN(a.normalized, flag(t, path, "normalized", !a.special));
      set_id(d, a.id, a.content, TokenizerData::kAdded | (a.special ? TokenizerData::kSpecial : 0));
      d.bytes[a.id] = a.content;
      std::string normalized = a.content;
      if (d.nfc) RETURN_IF_ERROR(nfc_normalize(a.content, normalized));
      d.normalized_content.push_back(std::move(normalized));
      (a.normalized ? d.normalized_added : d.raw_added).push_back(static_cast<std::uint32_t>(i));
      d.added.push_back(std::move(a));
    }
    return Status::ok();
  }

  Status load_normalizer(const json& root, TokenizerData& d) const {
    auto it = root.find("normalizer");
    if (it == root.end() || it->is_null()) return Status::ok();
    ASSIGN_OR_RETURN(std::string type, type_of(*it, "normalizer"));
    std::vector<std::pair<std::string, const json*>> parts;
    if (type == "Sequence") {
      auto list = it->find("normalizers");
      if (list == it->end() || !list->is_array())
        return malformed("normalizer.normalizers", "missing or not an array");
      for (std::size_t i = 0; i < list->size(); ++i)
        parts.emplace_back("normalizer.normalizers[" + std::to_string(i) + "]", &(*list)[i]);
    } else {
      parts.emplace_back("normalizer", &*it);
    }
    for (const auto& [path, n] : parts) {
      ASSIGN_OR_RETURN(std::string t, type_of(*n, path));
      if (t != "NFC") return unsupported(path + ".type", "normalizer '" + t + "' (only NFC)");
      d.nfc = true;
    }
    return Status::ok();
  }

  Status load_byte_level(const json& p, const std::string& path, TokenizerData& d) const {
    PreTokenizeStep step;
    step.kind = PreTokenizeStep::Kind::kByteLevel;
    ASSIGN_OR_RETURN(step.add_prefix_space, flag(p, path, "add_prefix_space", false));
    ASSIGN_OR_RETURN(bool use_regex, flag(p, path, "use_regex", true));
    if (use_regex) {
      ASSIGN_OR_RETURN(step.regex, PcreRegex::compile(kGpt2Pattern, false, origin_ + ": " + path));
    }
    d.pre_tokenize.push_back(std::move(step));
    return Status::ok();
  }

  Status load_split(const json& p, const std::string& path, TokenizerData& d) const {
    PreTokenizeStep step;
    auto pattern = p.find("pattern");
    if (pattern == p.end() || !pattern->is_object() || pattern->size() != 1)
      return malformed(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    auto regex = pattern->find("Regex");
    auto literal = pattern->find("String");
    const json& text = regex != pattern->end() ? *regex : *literal;
    if ((regex == pattern->end() && literal == pattern->end()) || !text.is_string())
      return malformed(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    ASSIGN_OR_RETURN(step.regex,
                     PcreRegex::compile(text.get<std::string>(), regex == pattern->end(),
                                        origin_ + ": " + path + ".pattern"));
    auto behavior = p.find("behavior");
    std::string b =
        behavior != p.end() && behavior->is_string() ? behavior->get<std::string>() : "";
    if (b == "Removed") {
      step.remove_matches = true;
    } else if (b != "Isolated") {
      return unsupported(path + ".behavior", "'" + b + "' (only Isolated and Removed)");
    }
    ASSIGN_OR_RETURN(step.invert, flag(p, path, "invert", false));
    d.pre_tokenize.push_back(std::move(step));
    return Status::ok();
  }

  Status load_pre_tokenizer(const json& root, TokenizerData& d) const {
    auto it = root.find("pre_tokenizer");
    if (it == root.end() || it->is_null())
      return unsupported("pre_tokenizer", "missing; a byte-level BPE needs ByteLevel");
    ASSIGN_OR_RETURN(std::string type, type_of(*it, "pre_tokenizer"));
    std::vector<std::pair<std::string, const json*>> parts;
    if (type == "Sequence") {
      auto list = it->find("pretokenizers");
      if (list == it->end() || !list->is_array())
        return malformed("pre_tokenizer.pretokenizers", "missing or not an array");
      for (std::size_t i = 0; i < list->size(); ++i)
        parts.emplace_back("pre_tokenizer.pretokenizers[" + std::to_string(i) + "]", &(*list)[i]);
    } else {
      parts.emplace_back("pre_tokenizer", &*it);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& [path, p] = parts[i];
      ASSIGN_OR_RETURN(std::string t, type_of(*p, path));
      if (t == "Split") {
        RETURN_IF_ERROR(load_split(*p, path, d));
      } else if (t == "ByteLevel") {
        if (i + 1 != parts.size())
          return unsupported(path, "ByteLevel must be the last pre-tokenizer");
        RETURN_IF_ERROR(load_byte_level(*p, path, d));
      } else {
        return unsupported(path + ".type", "pre-tokenizer '" + t + "' (only Split, ByteLevel)");
      }
    }
    if (d.pre_tokenize.empty() || d.pre_tokenize.back().kind != PreTokenizeStep::Kind::kByteLevel)
      return unsupported("pre_tokenizer", "no ByteLevel step; only byte-level BPE is supported");
    return Status::ok();
  }

  Status load_decoder(const json& root) const {
    auto it = root.find("decoder");
    if (it == root.end() || it->is_null())
      return unsupported("decoder", "missing; a byte-level BPE needs the ByteLevel decoder");
    ASSIGN_OR_RETURN(std::string type, type_of(*it, "decoder"));
    if (type != "ByteLevel") return unsupported("decoder.type", "'" + type + "' (only ByteLevel)");
    return Status::ok();
  }

  Status load_template(const json& p, const std::string& path, TokenizerData& d) const {
    auto single = p.find("single");
    if (single == p.end() || !single->is_array())
      return malformed(path + ".single", "missing or not an array");
    auto specials = p.find("special_tokens");
    bool seen_a = false;
    for (std::size_t i = 0; i < single->size(); ++i) {
      const json& piece = (*single)[i];
      const std::string ppath = path + ".single[" + std::to_string(i) + "]";
      if (piece.contains("Sequence")) {
        const json& s = piece["Sequence"];
        if (!s.is_object() || s.value("id", "") != "A" || seen_a)
          return unsupported(ppath, "only one sequence, $A, in the single template");
        seen_a = true;
        continue;
      }
      if (!piece.contains("SpecialToken") || !piece["SpecialToken"].is_object() ||
          !piece["SpecialToken"].contains("id") || !piece["SpecialToken"]["id"].is_string())
        return malformed(ppath,
                         "expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}");
      std::string name = piece["SpecialToken"]["id"].get<std::string>();
      if (specials == p.end() || !specials->is_object() || !specials->contains(name) ||
          !(*specials)[name].contains("ids") || !(*specials)[name]["ids"].is_array())
        return malformed(ppath, "special token '" + name + "' has no ids in special_tokens");
      for (const json& id : (*specials)[name]["ids"]) {
        if (!id.is_number_unsigned() || id.get<std::uint64_t>() >= d.spelling.size())
          return malformed(path + ".special_tokens." + name, "id out of range");
        (seen_a ? d.template_suffix : d.template_prefix).push_back(id.get<TokenId>());
      }
    }
    if (!seen_a) return unsupported(path + ".single", "no $A in the template");
    return Status::ok();
  }

  Status load_post_processor(const json& root, TokenizerData& d) const {
    auto it = root.find("post_processor");
    if (it == root.end() || it->is_null()) return Status::ok();
    ASSIGN_OR_RETURN(std::string type, type_of(*it, "post_processor"));
    std::vector<std::pair<std::string, const json*>> parts;
    if (type == "Sequence") {
      auto list = it->find("processors");
      if (list == it->end() || !list->is_array())
        return malformed("post_processor.processors", "missing or not an array");
      for (std::size_t i = 0; i < list->size(); ++i)
        parts.emplace_back("post_processor.processors[" + std::to_string(i) + "]", &(*list)[i]);
    } else {
      parts.emplace_back("post_processor", &*it);
    }
    for (const auto& [path, p] : parts) {
      ASSIGN_OR_RETURN(std::string t, type_of(*p, path));
      if (t == "ByteLevel") continue;  // trims offsets only; ids are unchanged
      if (t != "TemplateProcessing")
        return unsupported(path + ".type", "'" + t + "' (only ByteLevel, TemplateProcessing)");
      RETURN_IF_ERROR(load_template(*p, path, d));
    }
    return Status::ok();
  }

  Status load(const json& root, TokenizerData& d) const {
    if (!root.is_object()) return malformed("(root)", "expected a JSON object");
    for (const char* key : {"truncation", "padding"}) {
      auto f = root.find(key);
      if (f != root.end() && !f->is_null()) return unsupported(key, "must be null");
    }
    RETURN_IF_ERROR(load_normalizer(root, d));
    RETURN_IF_ERROR(load_model(root, d));
    RETURN_IF_ERROR(load_added(root, d));
    RETURN_IF_ERROR(load_pre_tokenizer(root, d));
    RETURN_IF_ERROR(load_decoder(root));
    RETURN_IF_ERROR(load_post_processor(root, d));
    return Status::ok();
  }

 private:
  static void set_id(TokenizerData& d, TokenId id, const std::string& spelling,
                     std::uint8_t extra_flags) {
    if (id >= d.spelling.size()) {
      d.spelling.resize(id + 1);
      d.bytes.resize(id + 1);
      d.flags.resize(id + 1, 0);
    }
    d.spelling[id] = spelling;
    std::string raw;
    d.bytes[id] = byte_level_bytes(spelling, raw) ? raw : spelling;
    d.flags[id] |= TokenizerData::kUsed | extra_flags;
    d.id_by_spelling[spelling] = id;
  }

  std::string origin_;
};

}  // namespace

Expected<Tokenizer> Tokenizer::from_json(std::string_view json_text, std::string_view origin) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return make_error(ErrorCategory::kInvalidInput, "tokenizer.malformed",
                      std::string(origin) + ": not valid JSON");
  }
  auto data = std::make_shared<TokenizerData>();
  data->origin = std::string(origin);
  RETURN_IF_ERROR(Loader(data->origin).load(root, *data));
  return Tokenizer(std::move(data));
}

Expected<Tokenizer> Tokenizer::load(const std::string& path) {
  std::error_code ec;
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(file, ec)) file /= "tokenizer.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return make_error(ErrorCategory::kNotFound, "tokenizer.not_found",
                      file.string() + ": cannot open tokenizer.json");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return from_json(text.str(), file.string());
}

}  // namespace cuda_agent
