#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

Error bad_file(const std::string& path, const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "safetensors.bad_file", path + ": " + what);
}

struct DtypeInfo {
  StDtype dtype;
  const char* name;
  std::size_t bytes;
};
constexpr DtypeInfo kDtypes[] = {{StDtype::kF32, "F32", 4},   {StDtype::kF16, "F16", 2},
                                 {StDtype::kBF16, "BF16", 2}, {StDtype::kF64, "F64", 8},
                                 {StDtype::kI64, "I64", 8},   {StDtype::kI32, "I32", 4},
                                 {StDtype::kI16, "I16", 2},   {StDtype::kI8, "I8", 1},
                                 {StDtype::kU8, "U8", 1},     {StDtype::kBool, "BOOL", 1}};

bool parse_dtype(const std::string& s, StDtype* out) {
  for (const auto& d : kDtypes) {
    if (s == d.name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* st_dtype_name(StDtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

std::size_t st_dtype_bytes(StDtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.bytes;
  }
  return 0;
}

std::int64_t SafetensorsTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

struct SafetensorsFile::Mapping {
  void* addr = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (addr != nullptr && size > 0) ::munmap(addr, size);
  }
};

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(errno == ENOENT ? ErrorCategory::kNotFound : ErrorCategory::kIo,
                      "safetensors.open", path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return make_error(ErrorCategory::kIo, "safetensors.open", path + ": " + std::strerror(e));
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<std::size_t>(st.st_size);
  if (mapping->size < 8) {
    ::close(fd);
    return bad_file(path, "truncated: " + std::to_string(mapping->size) +
                              " bytes, shorter than the 8-byte header length");
  }
  mapping->addr = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping->addr == MAP_FAILED) {
    mapping->addr = nullptr;
    return make_error(ErrorCategory::kIo, "safetensors.mmap", path + ": " + std::strerror(errno));
  }
  const auto* base = static_cast<const std::byte*>(mapping->addr);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | std::to_integer<std::uint64_t>(base[i]);
  if (header_len > mapping->size - 8) {
    return bad_file(path, "truncated: header of " + std::to_string(header_len) +
                              " bytes runs past the end of the file (" +
                              std::to_string(mapping->size) + " bytes)");
  }
  std::string_view header_text(reinterpret_cast<const char*>(base + 8), header_len);
  nlohmann::json header = nlohmann::json::parse(header_text, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    return bad_file(path, "header is not a JSON object");
  }
  const std::byte* data = base + 8 + header_len;
  const std::size_t data_size = mapping->size - 8 - header_len;

  SafetensorsFile file;
  file.path_ = path;
  file.tensors_ = std::make_shared<std::map<std::string, SafetensorsTensor>>();
  file.metadata_ = std::make_shared<std::map<std::string, std::string>>();
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return bad_file(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          return bad_file(path, "__metadata__." + m.key() + " is not a string");
        (*file.metadata_)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto fail = [&](const std::string& what) {
      return bad_file(path, "tensor '" + name + "': " + what);
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets")) {
      return fail("entry needs dtype, shape and data_offsets");
    }
    SafetensorsTensor t;
    t.name = name;
    t.file = path;
    if (!v["dtype"].is_string() || !parse_dtype(v["dtype"].get<std::string>(), &t.dtype)) {
      return fail("unsupported dtype " + v["dtype"].dump());
    }
    if (!v["shape"].is_array()) return fail("shape is not an array");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned())
        return fail("shape " + v["shape"].dump() + " is not a list of sizes");
      t.shape.push_back(d.get<std::int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      return fail("data_offsets is not [begin, end]");
    }
    const auto begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
    if (begin > end) return fail("data_offsets " + off.dump() + " end before they begin");
    if (end > data_size) {
      return fail("truncated: data_offsets " + off.dump() + " run past the " +
                  std::to_string(data_size) + " data bytes in the file");
    }
    t.bytes = end - begin;
    const std::uint64_t want = static_cast<std::uint64_t>(t.numel()) * st_dtype_bytes(t.dtype);
    if (t.bytes != want) {
      return fail(std::to_string(t.bytes) + " bytes but " + st_dtype_name(t.dtype) + " " +
                  v["shape"].dump() + " needs " + std::to_string(want));
    }
    t.data = data + begin;
    file.tensors_->emplace(name, std::move(t));
  }
  file.mapping_ = std::move(mapping);
  return file;
}

Expected<SafetensorsSet> SafetensorsSet::open(const std::string& dir_or_file) {
  SafetensorsSet set;
  set.origin_ = dir_or_file;
  std::error_code ec;
  const fs::path root(dir_or_file);
  std::vector<std::string> shard_paths;
  std::map<std::string, std::string> weight_map;  // tensor -> shard path
  if (fs::is_directory(root, ec)) {
    const fs::path index = root / "model.safetensors.index.json";
    if (fs::exists(index, ec)) {
      std::ifstream in(index);
      nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
          !j["weight_map"].is_object()) {
        return make_error(ErrorCategory::kInvalidInput, "safetensors.bad_index",
                          index.string() + ": expected an object with a \"weight_map\" object");
      }
      std::set<std::string> shards;
      for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it.value().is_string()) {
          return make_error(ErrorCategory::kInvalidInput, "safetensors.bad_index",
                            index.string() + ": weight_map." + it.key() + " is not a file name");
        }
        const std::string shard = (root / it.value().get<std::string>()).string();
        weight_map[it.key()] = shard;
        shards.insert(shard);
      }
      shard_paths.assign(shards.begin(), shards.end());
    } else if (fs::exists(root / "model.safetensors", ec)) {
      shard_paths.push_back((root / "model.safetensors").string());
    } else {
      return make_error(
          ErrorCategory::kNotFound, "safetensors.no_checkpoint",
          dir_or_file + ": neither model.safetensors nor model.safetensors.index.json");
    }
  } else {
    shard_paths.push_back(dir_or_file);
  }
  set.files_.reserve(shard_paths.size());
  for (const auto& p : shard_paths) {
    ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(p));
    set.files_.push_back(std::move(f));
  }
  for (const auto& f : set.files_) {
    for (const auto& [name, t] : f.tensors()) {
      auto w = weight_map.find(name);
      if (!weight_map.empty() && (w == weight_map.end() || w->second != f.path())) continue;
      if (!set.by_name_.emplace(name, &t).second) {
        return make_error(ErrorCategory::kInvalidInput, "safetensors.duplicate_tensor",
                          "tensor '" + name + "' is in more than one file of " + dir_or_file);
      }
    }
  }
  for (const auto& [name, shard] : weight_map) {
    if (!set.by_name_.count(name)) {
      return make_error(ErrorCategory::kInvalidInput, "safetensors.missing_tensor",
                        shard + ": tensor '" + name +
                            "' is named by model.safetensors.index.json but not in this shard");
    }
  }
  return set;
}

const SafetensorsTensor* SafetensorsSet::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Expected<const SafetensorsTensor*> SafetensorsSet::get(const std::string& name) const {
  if (const auto* t = find(name)) return t;
  return make_error(ErrorCategory::kNotFound, "safetensors.missing_tensor",
                    origin_ + ": no tensor '" + name + "'");
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(name);
  return out;
}

Expected<SafetensorsLayout> safetensors_layout(const std::string& label,
                                               const std::vector<SafetensorsWriteTensor>& tensors,
                                               const std::map<std::string, std::string>& metadata) {
  SafetensorsLayout layout;
  for (const auto& t : tensors) layout.order.push_back(&t);
  std::sort(layout.order.begin(), layout.order.end(),
            [](auto* a, auto* b) { return a->name < b->name; });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto* t : layout.order) {
    std::int64_t numel = 1;
    for (auto d : t->shape) numel *= d;
    if (t->bytes != static_cast<std::size_t>(numel) * st_dtype_bytes(t->dtype)) {
      return make_error(ErrorCategory::kInternal, "safetensors.bad_write",
                        label + ": tensor '" + t->name + "' has " + std::to_string(t->bytes) +
                            " bytes, its dtype and shape need " +
                            std::to_string(numel * st_dtype_bytes(t->dtype)));
    }
    header[t->name] = {{"dtype", st_dtype_name(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->bytes}}};
    offset += t->bytes;
  }
  layout.header = header.dump();
  while (layout.header.size() % 8 != 0) layout.header.push_back(' ');
  const std::uint64_t n = layout.header.size();
  for (int i = 0; i < 8; ++i) layout.length[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
  return layout;
}

Status write_safetensors(const std::string& path,
                         const std::vector<SafetensorsWriteTensor>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  ASSIGN_OR_RETURN(SafetensorsLayout layout, safetensors_layout(path, tensors, metadata));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorCategory::kIo, "safetensors.write", tmp + ": cannot open");
    out.write(reinterpret_cast<const char*>(layout.length.data()), 8);
    out.write(layout.header.data(), static_cast<std::streamsize>(layout.header.size()));
    for (const auto* t : layout.order) {
      out.write(static_cast<const char*>(t->data), static_cast<std::streamsize>(t->bytes));
    }
    out.flush();
    if (!out) return make_error(ErrorCategory::kIo, "safetensors.write", tmp + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return make_error(ErrorCategory::kIo, "safetensors.write", path + ": " + ec.message());
  return Status::ok();
}

}  // namespace cuda_agent
