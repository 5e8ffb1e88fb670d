#include "messages/store_value.h"

#include <capnp/serialize-packed.h>
#include <kj/io.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace cuda_agent {
namespace store_value {
namespace {

constexpr char kMagic[4] = {'C', 'A', 'R', 'S'};
// Largest unpacked message accepted: bounds what a corrupt prefix can make the decoder allocate.
constexpr std::uint32_t kMaxUnpackedWords = 1u << 27;  // 1 GiB

// Appends to a std::string, so the packed message lands behind the prefix without another copy.
class StringOutput : public kj::OutputStream {
 public:
  explicit StringOutput(std::string* out) : out_(out) {}
  void write(const void* buffer, size_t size) override {
    out_->append(static_cast<const char*>(buffer), size);
  }

 private:
  std::string* out_;
};

// Appends `words` in Cap'n Proto packed encoding, packed by capnp.
void pack(std::string& out, kj::ArrayPtr<const capnp::word> words) {
  StringOutput sink(&out);
  kj::BufferedOutputStreamWrapper buffered(sink);
  capnp::_::PackedOutputStream packed(buffered);
  packed.write(words.begin(), words.size() * sizeof(capnp::word));
  buffered.flush();
}

// Appends `words` in packed encoding as raw runs: tag 0xFF, the first word, a count byte and up
// to 255 more words verbatim. Valid packed encoding that any packed reader decodes; used for large
// segments (an episode's trajectory, an artifact), where capnp's packer costs ~1.2 ms per MiB on
// these cores and shrinks nothing (blob files are compressed by RocksDB anyway).
void raw_runs(std::string& out, kj::ArrayPtr<const capnp::word> words) {
  const char* p = reinterpret_cast<const char*>(words.begin());
  for (std::size_t i = 0; i < words.size();) {
    const std::size_t run = std::min<std::size_t>(256, words.size() - i);
    out.push_back(static_cast<char>(0xff));
    out.append(p + i * 8, 8);
    out.push_back(static_cast<char>(run - 1));
    out.append(p + (i + 1) * 8, (run - 1) * 8);
    i += run;
  }
}

// Segments from this size on are written as raw runs.
constexpr std::size_t kRawRunWords = 512;  // 4 KiB

}  // namespace

std::string finish(capnp::MessageBuilder& message, StoreRecordKind kind) {
  kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments = message.getSegmentsForOutput();
  // The segment table of Cap'n Proto's stream framing: count - 1, then each size, in words.
  std::vector<std::uint32_t> table(2 + segments.size() / 2 * 2, 0);
  table[0] = static_cast<std::uint32_t>(segments.size() - 1);
  std::size_t words = table.size() / 2;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    table[i + 1] = static_cast<std::uint32_t>(segments[i].size());
    words += segments[i].size();
  }
  std::string out;
  out.reserve(kStoreValuePrefixBytes + words * 8 + words / 64 + 64);
  out.append(kMagic, 4);
  out.push_back(static_cast<char>(kStoreFormatVersion >> 8));
  out.push_back(static_cast<char>(kStoreFormatVersion & 0xff));
  out.push_back(static_cast<char>(kind));
  out.push_back(0);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(words >> shift));
  pack(out, kj::ArrayPtr<const capnp::word>(reinterpret_cast<const capnp::word*>(table.data()),
                                            table.size() / 2));
  for (const auto& segment : segments) {
    if (segment.size() >= kRawRunWords) {
      raw_runs(out, segment);
    } else {
      pack(out, segment);
    }
  }
  return out;
}

// Large blobs (trajectories, artifacts) are referenced, not copied, when they are word-aligned
// and a whole number of words (encoded capnp messages are); otherwise copied.
capnp::Orphan<capnp::Data> blob(capnp::MessageBuilder& message, const std::string& bytes) {
  const auto* p = reinterpret_cast<const kj::byte*>(bytes.data());
  if (!bytes.empty() && bytes.size() % 8 == 0 && reinterpret_cast<std::uintptr_t>(p) % 8 == 0) {
    return message.getOrphanage().referenceExternalData(capnp::Data::Reader(p, bytes.size()));
  }
  return message.getOrphanage().newOrphanCopy(capnp::Data::Reader(p, bytes.size()));
}

Expected<kj::Array<capnp::word>> unpack(std::string_view bytes, StoreRecordKind kind) {
  Expected<StoreValuePrefix> prefix = read_store_value_prefix(bytes);
  if (!prefix) return prefix.error().with_context(std::string(to_string(kind)) + " value");
  if (prefix->kind != kind) {
    return corrupt(kind, "holds a record of kind " + std::string(to_string(prefix->kind)));
  }
  const std::size_t packed = bytes.size() - kStoreValuePrefixBytes;
  if (prefix->unpacked_words > kMaxUnpackedWords || prefix->unpacked_words > packed * 128 + 16 ||
      prefix->unpacked_words == 0) {
    return corrupt(kind, "implausible unpacked size of " + std::to_string(prefix->unpacked_words) +
                             " words for " + std::to_string(packed) + " packed bytes");
  }
  kj::ArrayInputStream input(kj::ArrayPtr<const kj::byte>(
      reinterpret_cast<const kj::byte*>(bytes.data()) + kStoreValuePrefixBytes, packed));
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(prefix->unpacked_words);
  {
    capnp::_::PackedInputStream unpacked(input);
    unpacked.read(words.begin(), words.size() * sizeof(capnp::word));
  }
  if (input.tryGetReadBuffer().size() != 0) return corrupt(kind, "trailing bytes");
  return words;
}

Error corrupt(StoreRecordKind kind, const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "store.corrupt_value",
                    std::string(to_string(kind)) + " value: " + what);
}

}  // namespace store_value

std::string_view to_string(StoreRecordKind kind) {
  switch (kind) {
    case StoreRecordKind::kUnknown: return "unknown";
    case StoreRecordKind::kStoreHeader: return "StoreHeader";
    case StoreRecordKind::kTask: return "Task";
    case StoreRecordKind::kBaseline: return "Baseline";
    case StoreRecordKind::kArtifact: return "Artifact";
    case StoreRecordKind::kEvaluation: return "Evaluation";
    case StoreRecordKind::kEpisode: return "Episode";
    case StoreRecordKind::kEpisodeSummary: return "EpisodeSummary";
    case StoreRecordKind::kRun: return "Run";
    case StoreRecordKind::kCheckpoint: return "Checkpoint";
    case StoreRecordKind::kMetric: return "Metric";
    case StoreRecordKind::kEpisodeAttempt: return "EpisodeAttempt";
  }
  return "unknown_kind";
}

Expected<StoreValuePrefix> read_store_value_prefix(std::string_view bytes) {
  auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
  if (bytes.size() < kStoreValuePrefixBytes + 1) {
    return make_error(ErrorCategory::kInvalidInput, "store.corrupt_value",
                      "too short for a store value (" + std::to_string(bytes.size()) + " bytes)");
  }
  if (std::memcmp(bytes.data(), store_value::kMagic, 4) != 0) {
    return make_error(ErrorCategory::kInvalidInput, "store.corrupt_value",
                      "bad magic (not a cuda-agent store value)");
  }
  StoreValuePrefix p;
  p.format_version = static_cast<std::uint16_t>(byte(4) << 8 | byte(5));
  p.kind = static_cast<StoreRecordKind>(byte(6));
  p.unpacked_words =
      static_cast<std::uint32_t>(byte(8)) << 24 | byte(9) << 16 | byte(10) << 8 | byte(11);
  if (p.format_version == 0) {
    return make_error(ErrorCategory::kInvalidInput, "store.unsupported_version",
                      "format version 0 is not a valid store format version");
  }
  if (p.format_version > kStoreFormatVersion) {
    return make_error(ErrorCategory::kInvalidInput, "store.newer_version",
                      "written by a newer version (store format " +
                          std::to_string(p.format_version) + "; this build reads up to " +
                          std::to_string(kStoreFormatVersion) + ")");
  }
  if (byte(7) != 0) {
    return make_error(ErrorCategory::kInvalidInput, "store.corrupt_value",
                      "unknown flags " + std::to_string(byte(7)));
  }
  return p;
}

}  // namespace cuda_agent
