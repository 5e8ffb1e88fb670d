// Manifest text edits for `cuda-agent train`: `--set SECTION.KEY=VALUE` on top of a manifest, and
// the keys that differ between the manifest a run was started with and the one it is resumed with
// (a changed manifest on resume is refused unless the user allows it, naming the keys).
//
//   ASSIGN_OR_RETURN(std::string text, apply_manifest_settings(file_text,
//   {"learner.staleness=0"})); ASSIGN_OR_RETURN(std::vector<std::string> keys,
//   changed_manifest_keys(stored, text));
//
// VALUE is read as a TOML value (42, 0.5, true, "text", [0, 1]); anything that does not parse as
// one is taken as a string, so `--set rollout.policy_model=qwen` works without quotes. Nodes
// ([[nodes]]) cannot be set this way: edit the manifest file.
//
// Threading: plain functions on values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// `text` with each "section.key=value" applied in order (a later one wins). Errors
/// (invalid_input, "manifest.bad_setting"): no '.', no '=', an empty part, a [[nodes]] key, a
/// section that is not a table, or `text` that is not TOML. Unknown sections and keys are left
/// for the manifest's own validation, which names them.
Expected<std::string> apply_manifest_settings(std::string_view text,
                                              const std::vector<std::string>& settings);

/// "section.key" for every option whose value differs between the two manifests, and "nodes"
/// when the node list differs; sorted. Compare manifests in the same normal form (e.g. both
/// through render_manifest) so that a default written out and one left out compare equal.
Expected<std::vector<std::string>> changed_manifest_keys(std::string_view before,
                                                         std::string_view after);

}  // namespace cuda_agent
