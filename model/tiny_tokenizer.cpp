#include "model/tiny_tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "model/pcre_regex.h"
#include "model/tokenizer_internal.h"

namespace cuda_agent {
namespace {

// Training text: what the agent reads and writes (prose, CUDA, Python, tool-call JSON), plus a
// little of other scripts so that non-ASCII merges exist.
constexpr std::string_view kCorpus = R"CORPUS(
You are an expert CUDA engineer. Write a kernel that computes the same result as the reference
PyTorch model, then make it faster. The reward is the speed-up over eager PyTorch and over
torch.compile, measured on the GPU after the output has been verified against the reference.
Use the tools to write files, compile them, verify the result and benchmark the kernel. When the
kernel is correct and fast, call finish. Do not read the reference outputs; do not cache results.

#include <cuda_runtime.h>
#include <cstdint>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) {
    float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

__global__ void softmax_kernel(const float* __restrict__ input, float* __restrict__ output,
                               int rows, int cols) {
  extern __shared__ float shared[];
  int row = blockIdx.x;
  int tid = threadIdx.x;
  const float* in = input + (int64_t)row * cols;
  float* out = output + (int64_t)row * cols;
  float max_value = -INFINITY;
  for (int j = tid; j < cols; j += blockDim.x) max_value = fmaxf(max_value, in[j]);
  shared[tid] = max_value;
  __syncthreads();
  for (int offset = blockDim.x / 2; offset > 0; offset /= 2) {
    if (tid < offset) shared[tid] = fmaxf(shared[tid], shared[tid + offset]);
    __syncthreads();
  }
  max_value = shared[0];
  float sum = 0.0f;
  for (int j = tid; j < cols; j += blockDim.x) sum += expf(in[j] - max_value);
  shared[tid] = sum;
  __syncthreads();
  for (int offset = blockDim.x / 2; offset > 0; offset /= 2) {
    if (tid < offset) shared[tid] += shared[tid + offset];
    __syncthreads();
  }
  sum = shared[0];
  for (int j = tid; j < cols; j += blockDim.x) out[j] = expf(in[j] - max_value) / sum;
}

extern "C" void launch_relu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  int threads = 256;
  int blocks = (int)((n + threads - 1) / threads);
  if (blocks > 65535) blocks = 65535;
  relu_kernel<<<blocks, threads, 0, stream>>>(x, y, n);
}

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return torch.relu(y) * 2.0


def get_inputs():
    return [torch.randn(128, 4096, device="cuda", dtype=torch.float32)]


def get_init_inputs():
    return [4096, 4096]

<tool_call>
{"name": "write_file", "arguments": {"path": "kernel.cu", "content": "#include <cuda_runtime.h>\n"}}
</tool_call>
<tool_call>
{"name": "compile", "arguments": {}}
</tool_call>
<tool_response>
{"ok": true, "registers": 32, "spill_bytes": 0, "shared_bytes": 1024, "warnings": []}
</tool_response>
<tool_call>
{"name": "benchmark", "arguments": {"config": {"threads": 256, "blocks": 1024}}}
</tool_call>
<tool_response>
{"verified": true, "median_ms": 0.0551, "eager_ms": 0.0720, "compile_ms": 0.0570, "speedup": 1.31}
</tool_response>

The kernel reads every element once and writes it once, so it is bound by memory bandwidth. A
vectorized load of four floats at a time (float4) halves the number of instructions. The number
of blocks should be a multiple of the number of streaming multiprocessors; the H200 has 132 of
them. Shared memory is 228 KB per multiprocessor; registers are 64K per multiprocessor. Don't use
more threads than the problem needs; it's often better to let each thread handle several items.
We'll check occupancy with the profiler, then we're done. I'm sure they'd agree it's worth it.

template <int kBlock>
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[kBlock][kBlock];
  __shared__ float Bs[kBlock][kBlock];
  int row = blockIdx.y * kBlock + threadIdx.y;
  int col = blockIdx.x * kBlock + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + kBlock - 1) / kBlock; ++t) {
    int a_col = t * kBlock + threadIdx.x;
    int b_row = t * kBlock + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && a_col < K) ? A[row * K + a_col] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBlock; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

__device__ __forceinline__ float warp_reduce_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_down_sync(0xffffffff, value, offset);
  return value;
}

The verifier compares the output with the reference within an absolute and a relative tolerance,
on several random inputs with seeds the agent never sees. A solution that reads the expected
output, caches results between calls, or launches work on another stream is rejected. The timer
uses CUDA events around many launches, after warm-up, and reports the median. Compile errors and
warnings are returned to the agent with the line numbers; the register count, the spill bytes and
the shared memory per block come from the compiler's resource report.

def test_model_matches_reference(seed: int) -> None:
    torch.manual_seed(seed)
    model = Model(*get_init_inputs()).cuda()
    inputs = [x.cuda() for x in get_inputs()]
    expected = model(*inputs)
    actual = custom_forward(model, *inputs)
    torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-4)

Résumé: café, naïve, façade, über, Ångström, São Paulo, Zürich, El Niño, crème brûlée.
Привет, мир! Это тестовый текст для токенизатора. Ядро работает быстро.
你好，世界！这是一个用于分词器的测试文本。内核运行得很快。矩阵乘法和归约。
こんにちは世界。カーネルは速く動きます。行列の積を計算します。
안녕하세요 세계. 커널이 빠르게 실행됩니다.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 128 256 1024 4096 65536 3.14159 2.71828 1e-5 6.02e23.
Symbols: -> => == != <= >= && || << >> += -= *= /= %= ++ -- :: ... // /* */ # @ $ % ^ & * ~ `
Emoji: 🚀 ✅ ❌ 🔥 ⚡ 👍 😀 🎉 — “quoted” ‘text’ … • × ÷ ± ≤ ≥ ≠ ∞ √ ∑ ∫ π α β γ δ λ μ σ.
)CORPUS";

// Added tokens after the merges: ChatML's specials, then Qwen2.5/Qwen3's tags (not special).
struct Added {
  const char* content;
  bool special;
};
constexpr Added kAdded[] = {
    {"<|endoftext|>", true},     {"<|im_start|>", true},  {"<|im_end|>", true},
    {"<tool_call>", false},      {"</tool_call>", false}, {"<tool_response>", false},
    {"</tool_response>", false}, {"<think>", false},      {"</think>", false},
};

// Word counts of `text` as Qwen2's regex splits it, added to `counts`.
Status count_words(const PcreRegex& regex, std::string_view text,
                   std::map<std::string, std::int64_t>& counts) {
  std::vector<MatchSpan> spans;
  RETURN_IF_ERROR(regex.find_all(text, spans));
  for (const auto& [b, e] : spans) ++counts[std::string(text.substr(b, e - b))];
  return Status::ok();
}

// Word counts of extra training text: normalized as encode normalizes it, and cut at the added
// tokens (encode never lets a merge cross one), so that merges go to what BPE will really see.
Status count_extra_words(const PcreRegex& regex, std::string_view raw, bool nfc,
                         std::map<std::string, std::int64_t>& counts) {
  std::string text;
  if (nfc) {
    RETURN_IF_ERROR(nfc_normalize(raw, text));
  } else {
    text = std::string(raw);
  }
  // The next occurrence of each added token at or after `pos`, searched again only once passed,
  // so a long text is scanned once per added token.
  std::vector<std::size_t> next;
  for (const Added& a : kAdded) next.push_back(text.find(a.content));
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t cut = text.size(), cut_len = 0;
    for (std::size_t k = 0; k < std::size(kAdded); ++k) {
      if (next[k] != std::string::npos && next[k] < pos)
        next[k] = text.find(kAdded[k].content, pos);
      if (next[k] < cut) {
        cut = next[k];
        cut_len = std::string_view(kAdded[k].content).size();
      }
    }
    RETURN_IF_ERROR(count_words(regex, std::string_view(text).substr(pos, cut - pos), counts));
    pos = cut + cut_len;
  }
  return Status::ok();
}

// Byte-pair merges learnt from word counts, most frequent pair first (ties: the smallest pair of
// ids), until `max_merges` or no pair is seen twice. Pair counts are kept up to date word by word
// (only words holding the merged pair change), which gives the same merges as recounting every
// pair after every merge. `tokens` holds every token's bytes by id, bytes first; merged tokens
// are appended to it.
std::vector<std::pair<int, int>> learn_merges(const std::map<std::string, std::int64_t>& counts,
                                              int max_merges, std::vector<std::string>& tokens) {
  using Pair = std::pair<int, int>;
  struct Word {
    std::vector<int> symbols;
    std::int64_t count;
  };
  std::vector<Word> words;
  for (const auto& [text, count] : counts) {
    Word w{{}, count};
    for (unsigned char c : text) w.symbols.push_back(c);
    words.push_back(std::move(w));
  }
  std::map<std::string, int> id_of;
  for (std::size_t id = 0; id < tokens.size(); ++id) id_of[tokens[id]] = static_cast<int>(id);

  std::map<Pair, std::int64_t> pair_counts;
  std::map<Pair, std::set<std::size_t>> words_with;       // words that hold the pair (or did)
  std::set<std::tuple<std::int64_t, int, int>> by_count;  // (-count, left, right)
  auto adjust = [&](const Pair& p, std::int64_t delta) {
    std::int64_t& c = pair_counts[p];
    if (c > 0) by_count.erase({-c, p.first, p.second});
    c += delta;
    if (c > 0) by_count.insert({-c, p.first, p.second});
  };
  auto add_word = [&](std::size_t w, std::int64_t sign) {
    const Word& word = words[w];
    for (std::size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      Pair p{word.symbols[i], word.symbols[i + 1]};
      adjust(p, sign * word.count);
      if (sign > 0) words_with[p].insert(w);
    }
  };
  for (std::size_t w = 0; w < words.size(); ++w) add_word(w, +1);

  std::vector<Pair> merges;
  for (int m = 0; m < max_merges; ++m) {
    if (by_count.empty() || -std::get<0>(*by_count.begin()) < 2) break;  // nothing seen twice
    const Pair best{std::get<1>(*by_count.begin()), std::get<2>(*by_count.begin())};
    std::string merged = tokens[best.first] + tokens[best.second];
    auto [it, inserted] = id_of.emplace(merged, static_cast<int>(tokens.size()));
    if (inserted) tokens.push_back(merged);
    merges.push_back(best);
    const std::set<std::size_t> holders = words_with[best];
    for (std::size_t w : holders) {
      add_word(w, -1);
      std::vector<int>& symbols = words[w].symbols;
      std::vector<int> out;
      out.reserve(symbols.size());
      for (std::size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == best.first && symbols[i + 1] == best.second) {
          out.push_back(it->second);
          ++i;
        } else {
          out.push_back(symbols[i]);
        }
      }
      symbols.swap(out);
      add_word(w, +1);
    }
  }
  return merges;
}

}  // namespace

Expected<std::string> tiny_tokenizer_json(const TinyTokenizerOptions& options) {
  using ordered = nlohmann::ordered_json;
  // Pre-tokenize the corpus with Qwen2's regex and count the words.
  ASSIGN_OR_RETURN(auto regex, PcreRegex::compile(kQwen2SplitPattern, false, "tiny tokenizer"));
  std::map<std::string, std::int64_t> counts;
  RETURN_IF_ERROR(count_words(*regex, kCorpus, counts));
  for (const std::string& text : options.extra_text)
    RETURN_IF_ERROR(count_extra_words(*regex, text, options.nfc, counts));

  std::vector<std::string> tokens;  // bytes of every token, by id
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  const std::vector<std::pair<int, int>> merges = learn_merges(counts, options.merges, tokens);

  ordered byte_level = {{"type", "ByteLevel"},
                        {"add_prefix_space", false},
                        {"trim_offsets", false},
                        {"use_regex", false}};
  ordered root;
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  root["added_tokens"] = ordered::array();
  int next_id = static_cast<int>(tokens.size());
  for (const Added& a : kAdded) {
    root["added_tokens"].push_back({{"id", next_id++},
                                    {"content", a.content},
                                    {"single_word", false},
                                    {"lstrip", false},
                                    {"rstrip", false},
                                    {"normalized", false},
                                    {"special", a.special}});
  }
  root["normalizer"] = options.nfc ? ordered{{"type", "NFC"}} : ordered(nullptr);
  root["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       ordered::array({ordered{{"type", "Split"},
                               {"pattern", {{"Regex", std::string(kQwen2SplitPattern)}}},
                               {"behavior", "Isolated"},
                               {"invert", false}},
                       byte_level})}};
  root["post_processor"] = byte_level;
  root["decoder"] = byte_level;
  ordered model = {{"type", "BPE"},
                   {"dropout", nullptr},
                   {"unk_token", nullptr},
                   {"continuing_subword_prefix", ""},
                   {"end_of_word_suffix", ""},
                   {"fuse_unk", false},
                   {"byte_fallback", false},
                   {"ignore_merges", false}};
  ordered vocab = ordered::object();
  for (std::size_t id = 0; id < tokens.size(); ++id)
    vocab[byte_level_spelling(tokens[id])] = static_cast<int>(id);
  model["vocab"] = std::move(vocab);
  ordered merge_list = ordered::array();
  for (const auto& [l, r] : merges) {
    merge_list.push_back(
        ordered::array({byte_level_spelling(tokens[l]), byte_level_spelling(tokens[r])}));
  }
  model["merges"] = std::move(merge_list);
  root["model"] = std::move(model);
  return root.dump(2, ' ', /*ensure_ascii=*/false);
}

Status write_tiny_tokenizer(const std::string& dir, const TinyTokenizerOptions& options) {
  ASSIGN_OR_RETURN(std::string text, tiny_tokenizer_json(options));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path file = std::filesystem::path(dir) / "tokenizer.json";
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (ec || !out) {
    return make_error(ErrorCategory::kIo, "tokenizer.write_failed",
                      file.string() + ": cannot write" + (ec ? ": " + ec.message() : ""));
  }
  return Status::ok();
}

}  // namespace cuda_agent
