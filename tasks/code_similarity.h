// Duplicates and contamination among task sources, on the CPU (issue 7 item 4). Both work on a
// Python token stream made here in C++ (no interpreter: thousands of tasks are fingerprinted in
// well under a second, and the result does not depend on which Python a machine has):
//
//   - normalized code: the tokens with comments, blank lines, layout and no-op string statements
//     (docstrings) removed, everything else verbatim. Two tasks with the same normalized code are
//     duplicates even when their bytes (and so their ids) differ.
//   - structure: the same tokens with user names replaced by ID, numbers by NUM and strings by
//     STR; names after a '.' (torch.relu, nn.Conv2d, x.view), keywords, and the usual module
//     aliases and builtins (torch, nn, F, self, super, range, ...) are kept. Its 4-token shingles,
//     hashed, are the task's structure set; the similarity of two tasks is the Jaccard index of
//     their sets. Renaming variables, reformatting, changing sizes or comments keeps it at 1.0.
//
//   CodeFingerprint a = fingerprint_code(train.source), b = fingerprint_code(eval.source);
//   if (structure_similarity(a, b) >= 0.9) ...  // contaminated
//
// Threading: free functions without shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuda_agent {

struct CodeFingerprint {
  std::string normalized;               ///< normalized code (tokens joined by single spaces)
  std::vector<std::uint64_t> shingles;  ///< hashed structure shingles, sorted, unique
};

/// Tokens of the source's structure form (exposed for tests): "def", "ID", "(", "torch", ...
std::vector<std::string> structure_tokens(std::string_view source);

CodeFingerprint fingerprint_code(std::string_view source);

/// Jaccard index of the two shingle sets; 1.0 when both are empty.
double structure_similarity(const CodeFingerprint& a, const CodeFingerprint& b);

/// Why a task is a duplicate: the index of the earlier task it repeats and how.
struct DuplicateOf {
  std::size_t index = 0;
  std::string how;  ///< "same content hash", "same code after normalization"
};

/// For each task (content hash, fingerprint), the first earlier one it duplicates, if any.
std::vector<std::optional<DuplicateOf>> find_duplicates(
    const std::vector<std::string>& content_hashes, const std::vector<CodeFingerprint>& prints);

/// The most similar evaluation task at or above the threshold.
struct ContaminatedBy {
  std::size_t eval_index = 0;
  double similarity = 0;
};

/// For each training fingerprint, the most similar evaluation fingerprint when its similarity
/// is >= threshold. Pairs whose set sizes alone rule the threshold out are skipped.
std::vector<std::optional<ContaminatedBy>> find_contaminated(
    const std::vector<CodeFingerprint>& train, const std::vector<CodeFingerprint>& eval,
    double threshold);

}  // namespace cuda_agent
