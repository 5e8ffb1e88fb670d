#include "model/weight_buckets.h"

#include <algorithm>
#include <utility>

namespace cuda_agent {
namespace {

Error mismatch(const WeightManifest& m, const std::string& tensor, const std::string& what) {
  return make_error(
      ErrorCategory::kInvalidInput, "policy.weights_mismatch",
      "version " + std::to_string(m.version.value()) + ": tensor '" + tensor + "' " + what);
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::uint64_t tensor_bytes(const at::Tensor& t) {
  return static_cast<std::uint64_t>(t.numel()) * t.element_size();
}

}  // namespace

TensorDType tensor_dtype_of(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return TensorDType::kFloat32;
    case at::kHalf: return TensorDType::kFloat16;
    case at::kBFloat16: return TensorDType::kBFloat16;
    case at::kDouble: return TensorDType::kFloat64;
    case at::kLong: return TensorDType::kInt64;
    case at::kInt: return TensorDType::kInt32;
    case at::kShort: return TensorDType::kInt16;
    case at::kChar: return TensorDType::kInt8;
    case at::kByte: return TensorDType::kUInt8;
    case at::kBool: return TensorDType::kBool;
    default: return TensorDType::kUnknown;
  }
}

Expected<PublishedVersion> snapshot_weights(const Transformer& model, const RunId& run_id,
                                            PolicyVersion version, PolicyVersion base_version,
                                            const WeightBucketOptions& options) {
  const std::uint64_t cap = options.bucket_bytes;
  if (cap == 0 || cap >= (512ull << 20)) {
    return make_error(ErrorCategory::kInvalidInput, "weights.bucket_size",
                      "bucket_bytes must be in (0, 512 MiB), not " + std::to_string(cap));
  }
  PublishedVersion out;
  out.manifest.run_id = run_id;
  out.manifest.version = version;
  out.manifest.base_version = base_version;
  out.manifest.full_snapshot = true;
  std::vector<std::string> data;
  auto open_bucket = [&] {
    data.emplace_back().reserve(cap);
    out.manifest.buckets.emplace_back().index = static_cast<std::uint32_t>(data.size() - 1);
  };
  open_bucket();
  at::NoGradGuard no_grad;
  for (const auto& [name, tensor] : model.parameters()) {
    const TensorDType dtype = tensor_dtype_of(tensor.scalar_type());
    if (dtype == TensorDType::kUnknown) {
      return make_error(ErrorCategory::kInvalidInput, "weights.dtype",
                        "tensor '" + name + "' has a dtype the wire cannot name");
    }
    const at::Tensor host = tensor.detach().to(at::kCPU).contiguous();
    const char* bytes = static_cast<const char*>(host.data_ptr());
    const std::uint64_t n = tensor_bytes(host);
    std::uint64_t done = 0;
    do {
      if (data.back().size() == cap) open_bucket();
      const std::uint64_t take = std::min<std::uint64_t>(cap - data.back().size(), n - done);
      out.manifest.buckets.back().tensors.push_back(
          {name, dtype, host.sizes().vec(), data.back().size(), take, done});
      data.back().append(bytes + done, take);
      done += take;
    } while (done < n);
  }
  for (auto& d : data) out.data.push_back(std::make_shared<const std::string>(std::move(d)));
  seal_manifest(out.manifest, out.data);
  return out;
}

WeightStager::WeightStager(Transformer staged) : staged_(std::move(staged)) {
  for (const auto& [name, tensor] : staged_.parameters()) by_name_[name] = tensor;
}

Status WeightStager::begin(const WeightManifest& m) {
  manifest_.reset();
  std::map<std::string, std::uint64_t> covered;
  for (const WeightBucketInfo& b : m.buckets) {
    for (const WeightTensor& t : b.tensors) {
      auto it = by_name_.find(t.name);
      if (it == by_name_.end()) return mismatch(m, t.name, "is not in this architecture");
      const at::Tensor& mine = it->second;
      if (t.dtype != tensor_dtype_of(mine.scalar_type())) {
        return mismatch(m, t.name, "has another dtype than this engine's");
      }
      if (t.shape != mine.sizes().vec()) {
        return mismatch(m, t.name,
                        "has shape " + shape_str(t.shape) + ", this engine's is " +
                            shape_str(mine.sizes().vec()));
      }
      if (!mine.is_contiguous()) return mismatch(m, t.name, "is not contiguous on this engine");
      if (t.piece_offset_bytes + t.size_bytes > tensor_bytes(mine) ||
          t.offset_bytes + t.size_bytes > b.size_bytes) {
        return mismatch(m, t.name, "has a piece outside the tensor or its bucket");
      }
      covered[t.name] += t.size_bytes;
    }
  }
  for (const auto& [name, tensor] : by_name_) {
    const std::uint64_t want = tensor_bytes(tensor);
    const std::uint64_t got = covered.count(name) ? covered[name] : 0;
    if ((m.full_snapshot || got) && got != want) {
      return mismatch(
          m, name,
          got ? "is covered by " + std::to_string(got) + " bytes of " + std::to_string(want)
              : "is missing from a full snapshot");
    }
  }
  manifest_ = m;
  applied_.assign(m.buckets.size(), false);
  return Status::ok();
}

Status WeightStager::apply(const WeightBucketInfo& info, std::string_view data) {
  if (!manifest_ || info.index >= applied_.size()) {
    return make_error(ErrorCategory::kInternal, "weights.not_begun",
                      "bucket " + std::to_string(info.index) + " applied outside begin/finish");
  }
  const WeightBucketInfo& mine = manifest_->buckets[info.index];
  if (data.size() != mine.size_bytes) {
    return mismatch(*manifest_, mine.tensors.empty() ? "" : mine.tensors[0].name,
                    "bucket " + std::to_string(info.index) + " has the wrong size");
  }
  at::NoGradGuard no_grad;
  for (const WeightTensor& t : mine.tensors) {
    if (t.size_bytes == 0) continue;
    at::Tensor& dst = by_name_.at(t.name);
    const at::Tensor src = at::from_blob(const_cast<char*>(data.data() + t.offset_bytes),
                                         {static_cast<std::int64_t>(t.size_bytes)}, at::kByte);
    at::Tensor dst_bytes = at::from_blob(static_cast<char*>(dst.data_ptr()) + t.piece_offset_bytes,
                                         {static_cast<std::int64_t>(t.size_bytes)},
                                         at::TensorOptions().dtype(at::kByte).device(dst.device()));
    dst_bytes.copy_(src);
  }
  applied_[info.index] = true;
  return Status::ok();
}

Expected<Transformer*> WeightStager::finish() {
  if (!manifest_) {
    return make_error(ErrorCategory::kInternal, "weights.not_begun", "finish without begin");
  }
  for (std::size_t i = 0; i < applied_.size(); ++i) {
    if (!applied_[i]) {
      return make_error(ErrorCategory::kInternal, "weights.incomplete",
                        "version " + std::to_string(manifest_->version.value()) + ": bucket " +
                            std::to_string(i) + " was never applied");
    }
  }
  manifest_.reset();
  return &staged_;
}

Transformer WeightStager::exchange(Transformer previous) {
  Transformer out = std::move(staged_);
  staged_ = std::move(previous);
  by_name_.clear();
  for (const auto& [name, tensor] : staged_.parameters()) by_name_[name] = tensor;
  return out;
}

}  // namespace cuda_agent
