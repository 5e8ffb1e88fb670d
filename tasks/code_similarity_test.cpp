// Token normalisation, duplicates and structure similarity (code_similarity.h).
#include "tasks/code_similarity.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

const char* kRelu = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    """Simple model that performs a ReLU activation."""
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the activation
        return torch.relu(x)

batch_size = 4096
dim = 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []
)";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

TEST(CodeSimilarity, StructureTokensDropLayoutCommentsAndDocstrings) {
  const auto t = structure_tokens("def f(a, b=2):\n    'doc'\n    return a.view(b) + \"s\"  # c\n");
  const std::vector<std::string> want = {"def", "ID", "(",  "ID", ",",      "ID", "=", "NUM",
                                         ")",   ":",  "NL", "IN", "return", "ID", ".", "view",
                                         "(",   "ID", ")",  "+",  "STR",    "NL", "DE"};
  // The trailing dedent is implicit at the end: compare the shared prefix exactly.
  ASSERT_GE(t.size(), want.size() - 1);
  for (std::size_t i = 0; i + 1 < want.size(); ++i) EXPECT_EQ(t[i], want[i]) << i;
}

TEST(CodeSimilarity, RenamingReformattingAndResizingKeepStructure) {
  std::string other = replace_all(kRelu, "4096", "16");
  other = replace_all(other, "x", "inp");
  other = replace_all(other, "# the activation", "# something else entirely");
  other = replace_all(other, "    return torch.relu(inp)", "    return torch.relu(  inp )");
  const CodeFingerprint a = fingerprint_code(kRelu), b = fingerprint_code(other);
  EXPECT_DOUBLE_EQ(structure_similarity(a, b), 1.0);
  EXPECT_NE(a.normalized, b.normalized);  // not a duplicate: sizes and names differ
}

TEST(CodeSimilarity, ADifferentOperatorLowersSimilarity) {
  const std::string gelu = replace_all(kRelu, "torch.relu(x)", "torch.nn.functional.gelu(x) * 2");
  const double sim = structure_similarity(fingerprint_code(kRelu), fingerprint_code(gelu));
  EXPECT_LT(sim, 0.9);
  EXPECT_GT(sim, 0.5);  // the KernelBench skeleton is shared
}

TEST(CodeSimilarity, DuplicatesByHashAndByNormalizedCode) {
  const std::string commented = replace_all(kRelu, "# the activation", "# reworded comment");
  const std::string docs = replace_all(kRelu, "Simple model", "A model");
  const std::string different = replace_all(kRelu, "4096", "2048");
  const std::vector<std::string> hashes = {"h1", "h1", "h2", "h3", "h4"};
  const std::vector<CodeFingerprint> prints = {fingerprint_code(kRelu), fingerprint_code(kRelu),
                                               fingerprint_code(commented), fingerprint_code(docs),
                                               fingerprint_code(different)};
  const auto d = find_duplicates(hashes, prints);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_FALSE(d[0]);
  ASSERT_TRUE(d[1]);
  EXPECT_EQ(d[1]->index, 0u);
  EXPECT_EQ(d[1]->how, "same content hash");
  ASSERT_TRUE(d[2]);
  EXPECT_EQ(d[2]->how, "same code after normalization");
  ASSERT_TRUE(d[3]);  // a changed docstring is still the same program
  EXPECT_FALSE(d[4]);
}

TEST(CodeSimilarity, ContaminationPicksTheMostSimilarEvalTaskAtTheThreshold) {
  const std::string gelu = replace_all(kRelu, "torch.relu(x)", "torch.nn.functional.gelu(x) * 2");
  const std::vector<CodeFingerprint> eval = {fingerprint_code(gelu), fingerprint_code(kRelu)};
  const std::vector<CodeFingerprint> train = {fingerprint_code(replace_all(kRelu, "dim", "d")),
                                              fingerprint_code("import os\nprint(os.getcwd())\n")};
  const auto hits = find_contaminated(train, eval, 0.9);
  ASSERT_TRUE(hits[0]);
  EXPECT_EQ(hits[0]->eval_index, 1u);
  EXPECT_DOUBLE_EQ(hits[0]->similarity, 1.0);
  EXPECT_FALSE(hits[1]);
  EXPECT_FALSE(find_contaminated(train, {fingerprint_code(gelu)}, 0.9)[0]);
}

TEST(CodeSimilarity, OddInputDoesNotCrash) {
  for (const char* s : {"", "'''unterminated", "x = (1,\n", "\\\n", "def f(:\n\t\treturn",
                        "0x1e+5 1e-3 .5j r'a' b\"b\" f'''c'''"}) {
    const CodeFingerprint f = fingerprint_code(s);
    EXPECT_GE(structure_similarity(f, f), 0.0) << s;
  }
}

}  // namespace
}  // namespace cuda_agent
