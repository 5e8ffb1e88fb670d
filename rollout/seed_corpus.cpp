// Seed-corpus transcripts (see seed_corpus.h): the style draw, the turns, the tool results, JSON.
#include "rollout/seed_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compile_farm/compile_report.h"
#include "compile_farm/compiler_output.h"
#include "compile_farm/prototypes.h"
#include "core/content_hash.h"
#include "rollout/agent_tools.h"
#include "rollout/episode.h"
#include "rollout/openai_policy.h"
#include "rollout/workspace.h"
#include "tasks/rng.h"

namespace cuda_agent {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::uint64_t kCorpusSalt = 0x636f'7270'7573ull;  // "corpus"
constexpr const char* kStyleNames[kCorpusStyleCount] = {
    "fused_vectorized", "fused_scalar", "per_op_kernels", "serial", "buggy", "buggy_fixed"};

// run_episode's answer to finish() (rollout/episode.cpp).
constexpr const char* kFinishResult =
    "finished; the final workspace is evaluated with unseen seeds";

// Registers as sm_90 builds of these kernels report them (nvcc 13.0): the grid-stride float4
// loop needs about 32, the one-element kernels 10 to 15.
std::uint32_t representative_registers(const std::string& kernel) {
  return kernel.find("_vec4(") != std::string::npos ? 32 : 12;
}

// What a successful compile of `files` reports, with nvcc-only numbers set as seed_corpus.h says.
Expected<std::string> compile_success_text(const CorpusSolution& s,
                                           const std::vector<SourceFile>& files, Rng& rng) {
  CompileResult r;
  ASSIGN_OR_RETURN(r.prototypes, compile_farm::parse_launchers(files));
  ContentHasher hash;
  for (const SourceFile& f : files) hash.add(f.path).add(f.content);
  r.artifact_hash = hash.hex();
  r.artifact_size_bytes = 21'000 + 8 * rng.below(1'200);  // 21 to 30 KiB, as built
  // ptxas reports the kernels last defined first.
  for (auto k = s.kernels.rbegin(); k != s.kernels.rend(); ++k)
    r.kernels.push_back({.demangled_name = *k, .registers = representative_registers(*k)});
  const double seconds = 1.4 + 0.01 * static_cast<double>(rng.below(120));
  r.file_timings.push_back({s.cu_path, seconds});
  r.total_seconds = seconds + 0.2 + 0.01 * static_cast<double>(rng.below(20));
  return compile_observation(r);
}

std::string plan_text(const PointwiseChainTask& task, const CorpusSolution& s, Rng& rng) {
  std::string chain;
  for (const ChainStep& st : task.steps) chain += (chain.empty() ? "" : " -> ") + st.op;
  const std::string shape =
      "(" + std::to_string(task.rows) + ", " + std::to_string(task.cols) + ") float32";
  switch (rng.below(3)) {
    case 0:
      return "The model applies " + chain + " elementwise to " + shape +
             " input. Plan: " + s.summary + ".";
    case 1:
      return chain + " is pointwise, so every element is independent. I'll write " + s.summary +
             ", and a ModelNew that calls it.";
    default:
      return "Writing " + s.cu_path + " (" + s.summary + ") and model_new.py for " + chain + ".";
  }
}

ChatToolCall tool_call(const std::string& name, const ojson& arguments) {
  return {name, arguments.dump(-1, ' ', false, ojson::error_handler_t::replace)};
}

std::string result_text(const Expected<std::string>& r) { return r ? *r : r.error().message; }

}  // namespace

const char* to_string(CorpusStyle style) { return kStyleNames[static_cast<std::size_t>(style)]; }

Expected<CorpusStyle> parse_corpus_style(std::string_view name) {
  for (std::size_t i = 0; i < kCorpusStyleCount; ++i)
    if (name == kStyleNames[i]) return static_cast<CorpusStyle>(i);
  std::string known;
  for (const char* n : kStyleNames) known += (known.empty() ? "" : ", ") + std::string(n);
  return make_error(ErrorCategory::kInvalidInput, "corpus.unknown_style",
                    "unknown corpus style \"" + std::string(name) + "\" (styles: " + known + ")");
}

StyleWeights cpu_style_mix() { return {0.15, 0.1, 0.1, 0.05, 0.5, 0.1}; }
StyleWeights gpu_style_mix() { return {0.3, 0.2, 0.15, 0.15, 0.1, 0.1}; }

Expected<StyleWeights> parse_style_mix(std::string_view text) {
  if (text == "cpu") return cpu_style_mix();
  if (text == "gpu") return gpu_style_mix();
  auto bad = [&](std::string_view part, const char* why) {
    return make_error(ErrorCategory::kInvalidInput, "corpus.bad_mix",
                      "style mix \"" + std::string(text) + "\": \"" + std::string(part) + "\" " +
                          why + " (expected cpu, gpu or e.g. \"fused_vectorized:0.5,buggy:0.5\")");
  };
  StyleWeights w{};
  double total = 0;
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view part = text.substr(pos, comma - pos);
    pos = comma + 1;
    const std::size_t colon = part.find(':');
    if (colon == std::string_view::npos) return bad(part, "is not STYLE:WEIGHT");
    ASSIGN_OR_RETURN(CorpusStyle style, parse_corpus_style(part.substr(0, colon)));
    const std::string number(part.substr(colon + 1));
    char* end = nullptr;
    const double v = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !(v >= 0) || v > 1e9)
      return bad(part, "has a weight that is not a number >= 0");
    w[static_cast<std::size_t>(style)] = v;
    total += v;
  }
  if (!(total > 0)) return bad(text, "gives every style weight 0");
  return w;
}

int expected_tier(CorpusStyle style, std::size_t chain_length) {
  const bool fused_gain = chain_length >= 2;
  switch (style) {
    case CorpusStyle::kFusedVectorized: return fused_gain ? 3 : 1;
    case CorpusStyle::kFusedScalar: return fused_gain ? 2 : 1;
    case CorpusStyle::kPerOpKernels:
    case CorpusStyle::kSerial: return 1;
    case CorpusStyle::kBuggy: return -1;
    case CorpusStyle::kBuggyFixed: return 1;  // the caller passes the fixed style instead
  }
  return -1;
}

int expected_compile_only(CorpusStyle style) { return style == CorpusStyle::kBuggy ? -1 : 1; }

std::string corpus_tools_json() {
  const PolicyRequest request{.tools = agent_tools()};
  const auto body = nlohmann::json::parse(openai_request_body("", request));
  return body.at("tools").dump();
}

Expected<CorpusTranscript> seed_transcript(const SeedCorpusOptions& o, std::uint64_t index) {
  if (o.system_prompt != "skill" && o.system_prompt != "full" && o.system_prompt != "brief")
    return make_error(ErrorCategory::kInvalidInput, "corpus.system_prompt",
                      "system prompt \"" + o.system_prompt + "\": expected brief or full (skill)");
  double total = 0;
  for (double w : o.style_weights) total += w >= 0 ? w : -1e300;
  if (!(total > 0))
    return make_error(ErrorCategory::kInvalidInput, "corpus.bad_mix",
                      "style weights must be >= 0 and some > 0");
  PointwiseChainOptions chain = o.chain;
  chain.seed = o.seed;
  CorpusTranscript t;
  ASSIGN_OR_RETURN(t.task, pointwise_chain_task(chain, ChainSplit::kTrain, index));
  Rng rng(splitmix64(splitmix64(o.seed ^ kCorpusSalt) ^ index));
  t.style = static_cast<CorpusStyle>(
      rng.weighted(std::vector<double>(o.style_weights.begin(), o.style_weights.end())));
  const bool buggy = t.style == CorpusStyle::kBuggy || t.style == CorpusStyle::kBuggyFixed;
  t.solution_style = buggy ? static_cast<SolutionStyle>(rng.below(4))
                           : static_cast<SolutionStyle>(static_cast<int>(t.style));
  ASSIGN_OR_RETURN(CorpusSolution s, write_solution(t.task, t.solution_style));
  t.expected_tier =
      t.style == CorpusStyle::kBuggy
          ? -1
          : expected_tier(static_cast<CorpusStyle>(static_cast<int>(t.solution_style)),
                          t.task.steps.size());
  t.expected_compile_only = expected_compile_only(t.style);
  t.system = std::string(agent_system_prompt(o.system_prompt == "brief" ? "brief" : "skill"));

  Workspace ws(t.task.source);
  auto& m = t.messages;
  m.push_back({ChatRole::kUser, task_prompt(t.task.source), {}});
  std::string first_cu = s.cu;
  InjectedBug bug;
  if (buggy) {
    const auto kind = rng.chance(0.5) ? BugKind::kMissingSemicolon : BugKind::kUndeclaredIdentifier;
    const std::size_t step = rng.below(s.step_lines.size());
    Expected<InjectedBug> b = inject_bug(s, kind, step);
    if (!b && b.error().code == "corpus.bug_not_unique")  // `val` is found nowhere else
      b = inject_bug(s, BugKind::kUndeclaredIdentifier, step);
    if (!b) return b.error();
    bug = std::move(*b);
    first_cu = bug.broken_cu;
  }
  // Turn 1: both files.
  m.push_back({ChatRole::kAssistant,
               plan_text(t.task, s, rng),
               {tool_call("write_file", {{"path", s.cu_path}, {"content", first_cu}}),
                tool_call("write_file", {{"path", "model_new.py"}, {"content", s.model_new}})}});
  m.push_back({ChatRole::kTool, result_text(ws.write_file(s.cu_path, first_cu)), {}});
  m.push_back({ChatRole::kTool, result_text(ws.write_file("model_new.py", s.model_new)), {}});
  // Turn 2: compile.
  static const char* kCompileLines[] = {"", "Compiling.", "Now build it.", "Let me compile."};
  m.push_back(
      {ChatRole::kAssistant, kCompileLines[rng.below(4)], {tool_call("compile", ojson::object())}});
  if (buggy) {
    const std::string error =
        "nvcc on " + s.cu_path + " failed:\n" + compile_farm::trim_compiler_log(bug.nvcc_output);
    m.push_back({ChatRole::kTool, error, {}});
  } else {
    ASSIGN_OR_RETURN(std::string ok, compile_success_text(s, ws.solution_files(), rng));
    m.push_back({ChatRole::kTool, ok, {}});
  }
  if (t.style == CorpusStyle::kBuggyFixed) {
    const std::string where = bug.nvcc_output.substr(0, bug.nvcc_output.find('\n'));
    m.push_back(
        {ChatRole::kAssistant,
         "nvcc: " + where.substr(where.find("error: ") + 7) + ". Fixing the " +
             s.cu_path.substr(8) + " line `" + bug.good_line + "`.",
         {tool_call("edit_file",
                    {{"path", s.cu_path}, {"old", bug.bad_line}, {"new", bug.good_line}})}});
    m.push_back(
        {ChatRole::kTool, result_text(ws.edit_file(s.cu_path, bug.bad_line, bug.good_line)), {}});
    m.push_back(
        {ChatRole::kAssistant, "Compiling again.", {tool_call("compile", ojson::object())}});
    ASSIGN_OR_RETURN(std::string ok, compile_success_text(s, ws.solution_files(), rng));
    m.push_back({ChatRole::kTool, ok, {}});
  }
  // Last turn: finish.
  const bool builds = t.style != CorpusStyle::kBuggy;
  m.push_back({ChatRole::kAssistant,
               builds ? "It builds; this is my solution." : "The build fails; I'm stopping here.",
               {tool_call("finish", ojson::object())}});
  m.push_back({ChatRole::kTool, kFinishResult, {}});
  t.final_files = ws.solution_files();
  return t;
}

std::string corpus_json_line(const CorpusTranscript& t) {
  ojson j;
  j["format"] = kCorpusFormat;
  j["version"] = kCorpusVersion;
  j["task"] = t.task.name;
  j["ops"] = t.task.ops();
  j["style"] = to_string(t.style);
  j["expected_tier"] = t.expected_tier;
  j["expected_compile_only"] = t.expected_compile_only;
  j["split"] = to_string(t.task.split);
  j["task_py"] = t.task.source;
  j["system"] = t.system;
  j["tools"] = ojson::parse(corpus_tools_json());
  ojson messages = ojson::array();
  for (const ChatMessage& m : t.messages) {
    ojson jm = {{"role", role_name(m.role)}, {"content", m.content}};
    if (m.role == ChatRole::kAssistant) {
      jm["tool_calls"] = ojson::array();
      for (const ChatToolCall& c : m.tool_calls)
        jm["tool_calls"].push_back(
            {{"name", c.name}, {"arguments", ojson::parse(c.arguments_json)}});
    }
    messages.push_back(std::move(jm));
  }
  j["messages"] = std::move(messages);
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

Expected<CorpusShape> corpus_shape(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCategory::kIo, "corpus.read", "cannot read the corpus " + path);
  std::vector<std::int64_t> turns, tokens;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const ojson j = ojson::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("messages") || !j["messages"].is_array())
      return make_error(ErrorCategory::kInvalidInput, "corpus.bad_line",
                        path + " line " + std::to_string(number) + ": not a corpus transcript");
    std::int64_t assistant = 0;
    std::size_t bytes = j.contains("system") && j["system"].is_string()
                            ? j["system"].get_ref<const std::string&>().size()
                            : 0;
    for (const ojson& m : j["messages"]) {
      if (!m.is_object()) continue;
      if (m.value("role", "") == "assistant") ++assistant;
      if (m.contains("content") && m["content"].is_string())
        bytes += m["content"].get_ref<const std::string&>().size();
      if (m.contains("tool_calls") && m["tool_calls"].is_array())
        for (const ojson& c : m["tool_calls"]) bytes += c.dump().size();
    }
    turns.push_back(assistant);
    tokens.push_back(static_cast<std::int64_t>(bytes / 4));  // as the episode estimates
  }
  return CorpusShape{std::move(turns), std::move(tokens)};
}

std::string corpus_budget_warning(const CorpusShape& shape, std::int64_t max_turns,
                                  std::int64_t max_context_tokens) {
  const std::size_t n = shape.turns.size();
  if (n == 0) return {};
  auto over = [n](const std::vector<std::int64_t>& v, std::int64_t budget) {
    const auto k = std::count_if(v.begin(), v.end(), [&](std::int64_t x) { return x > budget; });
    return std::pair<std::size_t, std::int64_t>(static_cast<std::size_t>(k),
                                                *std::max_element(v.begin(), v.end()));
  };
  std::string out;
  auto say = [&](std::size_t k, const std::string& what) {
    if (k == 0) return;
    if (!out.empty()) out += "; ";
    out += fmt::format("{} of {} corpus transcripts ({:.0f}%) {}", k, n,
                       100.0 * double(k) / double(n), what);
  };
  const auto [long_turns, most_turns] = over(shape.turns, max_turns);
  say(long_turns, fmt::format("need more than rollout.max_turns = {} turns (the longest: {})",
                              max_turns, most_turns));
  const auto [long_context, most_tokens] = over(shape.tokens, max_context_tokens);
  say(long_context,
      fmt::format("need more than rollout.max_context_tokens = {} (the longest: about {} tokens)",
                  max_context_tokens, most_tokens));
  if (!out.empty())
    out +=
        ": a policy that imitates them ends those episodes truncated, scored on an unfinished "
        "workspace; leave room for a turn or two more than the corpus takes";
  return out;
}

}  // namespace cuda_agent
