// Tiny configurations for the torch tests of model/.
#pragma once

#include <filesystem>
#include <string>

#include "model/model_config.h"

namespace cuda_agent::testing {

/// A tiny config of the family: GQA (4 heads, 2 KV heads), head_dim 8, hidden 32, vocab 50.
inline ModelConfig tiny_config(const std::string& type) {
  ModelConfig c = tiny_model_config(type, /*vocab_size=*/50, /*head_dim=*/8);
  c.max_position_embeddings = 256;
  return c;
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("ca_model_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string str(const std::string& name = "") const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace cuda_agent::testing
