// Encode and decode. Pipeline of `encode`, as in the `tokenizers` library:
//   1. added tokens with normalized=false are cut out of the raw text;
//   2. each remaining piece is normalized (NFC) and added tokens with normalized=true cut out;
//   3. each remaining piece goes through the pre-tokenizer steps (Split..., ByteLevel) into words;
//   4. each word is BPE-merged over its bytes (word cache in front);
//   5. with add_special_tokens, the post-processor template's tokens go around the result.
#include <deque>
#include <queue>

#include "model/tokenizer_internal.h"

namespace cuda_agent {
namespace {

// A piece of text, or an added token already recognised.
struct Segment {
  std::string_view text;
  std::optional<TokenId> token;
};

// Cuts the added tokens `candidates` (indices into d.added, matched against `contents`) out of
// `text`, leftmost then longest first, with single_word / lstrip / rstrip as `tokenizers` applies
// them (a match refused by single_word is skipped, not retried shorter).
void split_added(const TokenizerData& d, const std::vector<std::uint32_t>& candidates,
                 bool normalized, std::string_view text, std::vector<Segment>& out) {
  auto content = [&](std::uint32_t i) -> const std::string& {
    return normalized ? d.normalized_content[i] : d.added[i].content;
  };
  if (candidates.empty() || text.empty()) {
    if (!text.empty()) out.push_back({text, std::nullopt});
    return;
  }
  std::array<bool, 256> first_byte{};
  for (std::uint32_t i : candidates) first_byte[static_cast<unsigned char>(content(i)[0])] = true;
  std::size_t start_offset = 0;  // end of the last emitted token
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const AddedToken* best = nullptr;
    std::size_t best_len = 0;
    for (std::uint32_t i : candidates) {
      const std::string& c = content(i);
      if (c.size() > best_len && text.compare(pos, c.size(), c) == 0) {
        best = &d.added[i];
        best_len = c.size();
      }
    }
    if (best == nullptr) {
      ++pos;
      continue;
    }
    std::size_t start = pos;
    std::size_t stop = pos + best_len;
    pos = stop;
    if (start < start_offset) continue;  // inside whitespace an rstrip already took
    if (best->single_word &&
        (ends_with_word_char(text.substr(0, start)) || starts_with_word_char(text.substr(stop)))) {
      continue;
    }
    if (best->lstrip) {
      start = std::max(start - trailing_whitespace_bytes(text.substr(0, start)), start_offset);
    }
    if (best->rstrip) stop += leading_whitespace_bytes(text.substr(stop));
    if (start > start_offset) out.push_back({text.substr(start_offset, start - start_offset), {}});
    out.push_back({{}, best->id});
    start_offset = stop;
    pos = stop;
  }
  if (start_offset < text.size()) out.push_back({text.substr(start_offset), std::nullopt});
}

// Splits each piece by `step`, appending the resulting pieces to `out`.
Status apply_step(const PreTokenizeStep& step, const std::vector<std::string_view>& in,
                  std::vector<std::string_view>& out, std::deque<std::string>& arena,
                  std::vector<MatchSpan>& matches) {
  for (std::string_view piece : in) {
    if (step.kind == PreTokenizeStep::Kind::kByteLevel && step.add_prefix_space &&
        piece.front() != ' ') {
      arena.push_back(" " + std::string(piece));
      piece = arena.back();
    }
    if (!step.regex) {
      out.push_back(piece);
      continue;
    }
    matches.clear();
    RETURN_IF_ERROR(step.regex->find_all(piece, matches));
    std::size_t prev = 0;
    auto emit = [&](std::size_t b, std::size_t e, bool is_match) {
      if (e <= b) return;
      bool keep = !step.remove_matches || (is_match == step.invert);
      if (keep) out.push_back(piece.substr(b, e - b));
    };
    for (const auto& [b, e] : matches) {
      emit(prev, b, false);
      emit(b, e, true);
      prev = e;
    }
    emit(prev, piece.size(), false);
  }
  return Status::ok();
}

// BPE over the bytes of one word: repeatedly merge the adjacent pair of lowest rank (leftmost
// first), as `tokenizers` does with its priority queue.
void bpe_word(const TokenizerData& d, std::string_view word, std::vector<TokenId>& out) {
  if (word.size() == 1) {
    out.push_back(d.byte_ids[static_cast<unsigned char>(word[0])]);
    return;
  }
  struct Symbol {
    TokenId id;
    std::int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> sym(word.size());
  for (std::size_t i = 0; i < word.size(); ++i) {
    sym[i] = {d.byte_ids[static_cast<unsigned char>(word[i])], static_cast<std::int32_t>(i) - 1,
              i + 1 < word.size() ? static_cast<std::int32_t>(i + 1) : -1, true};
  }
  struct Candidate {
    std::uint32_t rank;
    std::int32_t pos;
    TokenId result;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push_pair = [&](std::int32_t pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    auto it = d.merges.find((std::uint64_t{sym[pos].id} << 32) | sym[sym[pos].next].id);
    if (it != d.merges.end()) queue.push({it->second.rank, pos, it->second.result});
  };
  for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(word.size()); ++i) push_pair(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    auto it = d.merges.find((std::uint64_t{left.id} << 32) | sym[left.next].id);
    if (it == d.merges.end() || it->second.result != top.result) continue;  // stale entry
    Symbol& right = sym[left.next];
    left.id = top.result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = top.pos;
    push_pair(left.prev);
    push_pair(top.pos);
  }
  for (std::int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

void encode_word(const TokenizerData& d, std::string_view word, std::vector<TokenId>& out) {
  if (d.ignore_merges) {
    auto it = d.vocab_by_bytes.find(std::string(word));
    if (it != d.vocab_by_bytes.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (word.size() == 1 || word.size() > TokenizerData::kCacheMaxWordBytes) {
    bpe_word(d, word, out);
    return;
  }
  std::string key(word);
  {
    std::lock_guard<std::mutex> lock(d.cache_mu);
    auto it = d.cache.find(key);
    if (it != d.cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::size_t first = out.size();
  bpe_word(d, word, out);
  std::lock_guard<std::mutex> lock(d.cache_mu);
  if (d.cache.size() >= TokenizerData::kCacheEntries) d.cache.clear();
  d.cache.emplace(std::move(key), std::vector<TokenId>(out.begin() + first, out.end()));
}

}  // namespace

Expected<std::vector<TokenId>> Tokenizer::encode(std::string_view text,
                                                 bool add_special_tokens) const {
  const TokenizerData& d = *data_;
  if (auto bad = first_invalid_utf8(text)) {
    return make_error(ErrorCategory::kInvalidInput, "tokenizer.invalid_utf8",
                      "text to encode is not valid UTF-8 at byte " + std::to_string(*bad) + " of " +
                          std::to_string(text.size()));
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens) ids = d.template_prefix;

  std::vector<Segment> raw_segments;
  split_added(d, d.raw_added, false, text, raw_segments);
  std::vector<Segment> segments;
  std::deque<std::string> arena;  // normalized text and prefixed pieces; views point here
  std::vector<std::string_view> pieces, next;
  std::vector<MatchSpan> matches;
  for (const Segment& raw : raw_segments) {
    if (raw.token) {
      ids.push_back(*raw.token);
      continue;
    }
    std::string_view piece = raw.text;
    if (d.nfc) {
      std::string normalized;
      RETURN_IF_ERROR(nfc_normalize(piece, normalized));
      arena.push_back(std::move(normalized));
      piece = arena.back();
    }
    segments.clear();
    split_added(d, d.normalized_added, true, piece, segments);
    for (const Segment& s : segments) {
      if (s.token) {
        ids.push_back(*s.token);
        continue;
      }
      pieces.assign(1, s.text);
      for (const PreTokenizeStep& step : d.pre_tokenize) {
        next.clear();
        RETURN_IF_ERROR(apply_step(step, pieces, next, arena, matches));
        pieces.swap(next);
      }
      for (std::string_view word : pieces) encode_word(d, word, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), d.template_suffix.begin(), d.template_suffix.end());
  return ids;
}

Expected<std::string> Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  const TokenizerData& d = *data_;
  std::string out;
  out.reserve(ids.size() * 4);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    TokenId id = ids[i];
    if (id >= d.flags.size() || !(d.flags[id] & TokenizerData::kUsed)) {
      return make_error(ErrorCategory::kInvalidInput, "tokenizer.bad_id",
                        "token id " + std::to_string(id) + " at position " + std::to_string(i) +
                            " is not in the vocabulary of " + d.origin);
    }
    if (skip_special && (d.flags[id] & TokenizerData::kSpecial)) continue;
    out += d.bytes[id];
  }
  return out;
}

Expected<std::string> Tokenizer::decode_lossy(std::span<const TokenId> ids,
                                              bool skip_special) const {
  ASSIGN_OR_RETURN(std::string bytes, decode(ids, skip_special));
  std::string out;
  out.reserve(bytes.size());
  std::string_view rest = bytes;
  while (!rest.empty()) {
    std::optional<std::size_t> bad = first_invalid_utf8(rest);
    if (!bad) {
      out.append(rest);
      break;
    }
    out.append(rest.substr(0, *bad));
    out += "\xEF\xBF\xBD";
    // Skip the maximal ill-formed prefix: the lead byte and the continuation bytes that follow.
    std::size_t skip = 1;
    while (*bad + skip < rest.size() && skip < 4 &&
           (static_cast<unsigned char>(rest[*bad + skip]) & 0xC0) == 0x80 &&
           (static_cast<unsigned char>(rest[*bad]) & 0xC0) != 0x80) {
      ++skip;
    }
    rest.remove_prefix(*bad + skip);
  }
  return out;
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  auto it = data_->id_by_spelling.find(std::string(token));
  if (it == data_->id_by_spelling.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  if (id >= data_->flags.size() || !(data_->flags[id] & TokenizerData::kUsed)) return std::nullopt;
  return data_->spelling[id];
}

std::size_t Tokenizer::vocab_size() const { return data_->spelling.size(); }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return data_->added; }
bool Tokenizer::is_special(TokenId id) const {
  return id < data_->flags.size() && (data_->flags[id] & TokenizerData::kSpecial);
}
std::vector<TokenId> Tokenizer::special_ids() const {
  std::vector<TokenId> ids;
  for (const AddedToken& a : data_->added) {
    if (a.special) ids.push_back(a.id);
  }
  return ids;
}
const std::string& Tokenizer::origin() const { return data_->origin; }

}  // namespace cuda_agent
