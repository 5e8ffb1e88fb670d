// The safetensors format, read and written here (no Python, no third-party reader): an 8-byte
// little-endian header length, a JSON header {"name": {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {...}}, then the raw little-endian tensor bytes. Files are memory-mapped.
//
//   ASSIGN_OR_RETURN(SafetensorsSet set, SafetensorsSet::open("/models/qwen"));
//   const SafetensorsTensor* t = set.find("model.embed_tokens.weight");  // bytes in the mmap
//
// A checkpoint directory holds either model.safetensors or model.safetensors.index.json, whose
// "weight_map" names the shard of every tensor. Every structural problem (truncated file, header
// past the end, offsets outside the data, a size that disagrees with dtype x shape, a tensor the
// index names but its shard lacks) is an Error naming the file and the tensor.
//
// Torch-free, so the CLI and tests can use it without linking libtorch.
//
// Threading: an opened file or set is immutable; any number of threads may read it. The mapping
// lives as long as the last copy of the object.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

enum class StDtype : std::uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

/// "F32", "BF16", ... (the header's spelling).
const char* st_dtype_name(StDtype dtype);
std::size_t st_dtype_bytes(StDtype dtype);

/// One tensor of a mapped file: its bytes stay valid while the owning file/set lives.
struct SafetensorsTensor {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<std::int64_t> shape;
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
  std::string file;  ///< the file it came from (for error messages)

  std::int64_t numel() const;
};

/// One memory-mapped .safetensors file.
class SafetensorsFile {
 public:
  /// Maps and checks `path`. Errors: kNotFound (no file), kIo (cannot map), kInvalidInput
  /// (code "safetensors.bad_file") naming the path and, where one is at fault, the tensor.
  static Expected<SafetensorsFile> open(const std::string& path);

  const std::map<std::string, SafetensorsTensor>& tensors() const { return *tensors_; }
  const std::map<std::string, std::string>& metadata() const { return *metadata_; }
  const std::string& path() const { return path_; }

 private:
  struct Mapping;
  std::shared_ptr<Mapping> mapping_;
  std::shared_ptr<std::map<std::string, SafetensorsTensor>> tensors_;
  std::shared_ptr<std::map<std::string, std::string>> metadata_;
  std::string path_;
};

/// All tensors of a checkpoint directory (single file or sharded through the index).
class SafetensorsSet {
 public:
  /// `dir`/model.safetensors.index.json if present (every shard it names is opened, and every
  /// tensor it maps must be in its shard), otherwise `dir`/model.safetensors, otherwise `dir`
  /// itself when it is a file. Errors name the directory, file and tensor.
  static Expected<SafetensorsSet> open(const std::string& dir_or_file);

  /// nullptr when absent.
  const SafetensorsTensor* find(const std::string& name) const;
  /// The tensor, or kNotFound "safetensors.missing_tensor" naming it and where it was looked for.
  Expected<const SafetensorsTensor*> get(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& origin() const { return origin_; }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, const SafetensorsTensor*> by_name_;
  std::string origin_;
};

/// A tensor to write: `bytes` must equal numel x dtype size.
struct SafetensorsWriteTensor {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};

/// The layout of a .safetensors file as write_safetensors writes it: `length` (the header's size,
/// 8 bytes little-endian), `header` (JSON, padded with spaces to 8 bytes as the reference writer
/// does), then the bytes of the tensors in `order` (sorted by name). Writers that put the bytes
/// somewhere else (the learner's checkpoint staging) use it, so there is one layout. Error
/// kInternal "safetensors.bad_write", naming `label` and the tensor, when a tensor's bytes
/// disagree with its dtype and shape.
struct SafetensorsLayout {
  std::array<unsigned char, 8> length{};
  std::string header;
  std::vector<const SafetensorsWriteTensor*> order;
};
Expected<SafetensorsLayout> safetensors_layout(const std::string& label,
                                               const std::vector<SafetensorsWriteTensor>& tensors,
                                               const std::map<std::string, std::string>& metadata);

/// Writes one .safetensors file (safetensors_layout), through a temporary file renamed into
/// place.
Status write_safetensors(const std::string& path,
                         const std::vector<SafetensorsWriteTensor>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace cuda_agent
