// tokenizer_bench: encode throughput of the byte-level BPE (model/tokenizer.h) on one thread.
// Tokenizer: the tiny Qwen2-layout tokenizer (NFC normalizer, Qwen2 regex, ~500 merges).
// Text: ~4 MB of mixed prose, CUDA/C++ and Python code, JSON tool calls, CJK, emoji and
// whitespace runs, with a running counter so that not every word hits the word cache.
// Check first: decode(encode(text)) must equal the text, else exit 1 (that pass, on an empty word
// cache, is timed too). Then five timed passes (steady_clock around encode of the whole text, in 4
// KiB chunks as a rollout would feed messages); the median pass gives MB/s (10^6 bytes of input per
// second) and tokens/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "model/tiny_tokenizer.h"
#include "model/tokenizer.h"

int main() {
  using namespace cuda_agent;
  Expected<std::string> json = tiny_tokenizer_json();
  if (!json) return std::fprintf(stderr, "%s\n", json.error().to_string().c_str()), 1;
  Expected<Tokenizer> tok = Tokenizer::from_json(*json, "tiny");
  if (!tok) return std::fprintf(stderr, "%s\n", tok.error().to_string().c_str()), 1;

  const char* samples[] = {
      "The kernel reads every element once, so it is bound by memory bandwidth; we'll use "
      "float4 loads and a grid-stride loop. ",
      "__global__ void k(const float* __restrict__ x, float* y, int n) {\n  int i = blockIdx.x * "
      "blockDim.x + threadIdx.x;\n  if (i < n) y[i] = fmaxf(x[i], 0.0f);\n}\n",
      "def forward(self, x):\n    return torch.relu(self.linear(x)) * 2.0\n\n\n",
      "<tool_call>\n{\"name\": \"benchmark\", \"arguments\": {\"config\": {\"threads\": 256}}}\n"
      "</tool_call>",
      "矩阵乘法的内核运行得很快。カーネルは速い。Ядро работает быстро. 🚀✅ ",
      "        \t\n\n    x = y  +  z ;   // aligned   comment\n",
  };
  std::string text;
  for (std::size_t i = 0; text.size() < 4'000'000; ++i) {
    text += samples[i % std::size(samples)];
    text += " v" + std::to_string(i * 7919 % 100000) + "\n";
  }
  std::vector<std::string_view> chunks;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = std::min(text.size(), at + 4096);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    chunks.emplace_back(text.data() + at, end - at);
    at = end;
  }

  auto encode_all = [&](std::vector<TokenId>& ids) -> bool {
    ids.clear();
    for (std::string_view c : chunks) {
      Expected<std::vector<TokenId>> part = tok->encode(c);
      if (!part) return std::fprintf(stderr, "%s\n", part.error().to_string().c_str()), false;
      ids.insert(ids.end(), part->begin(), part->end());
    }
    return true;
  };
  std::vector<TokenId> ids;
  auto cold0 = std::chrono::steady_clock::now();
  if (!encode_all(ids)) return 1;
  double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - cold0).count();
  Expected<std::string> back = tok->decode(ids);
  if (!back || *back != text) {
    std::fprintf(stderr, "tokenizer_bench: decode(encode(text)) != text\n");
    return 1;
  }
  std::vector<double> seconds;
  for (int pass = 0; pass < 5; ++pass) {
    auto t0 = std::chrono::steady_clock::now();
    if (!encode_all(ids)) return 1;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  double s = seconds[seconds.size() / 2];
  std::printf("tokenizer_bench: %.2f MB of mixed text -> %zu tokens (%.2f bytes/token)\n",
              text.size() / 1e6, ids.size(), double(text.size()) / double(ids.size()));
  std::printf("encode: %.1f MB/s, %.2f M tokens/s (median of 5 passes, one thread, warm cache)\n",
              text.size() / 1e6 / s, ids.size() / 1e6 / s);
  std::printf("first pass (empty word cache): %.1f MB/s\n", text.size() / 1e6 / cold);
  std::printf("round trip checked: decode(encode(text)) == text\n");
  return 0;
}
