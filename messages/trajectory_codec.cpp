#include "messages/trajectory_codec.h"

#include "messages/trajectory.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using namespace wire_detail;  // NOLINT: the codec's vocabulary

CA_SAME_ENUM(TurnRole::kUnknown, wire::TurnRole::UNKNOWN);
CA_SAME_ENUM(TurnRole::kSystem, wire::TurnRole::SYSTEM);
CA_SAME_ENUM(TurnRole::kUser, wire::TurnRole::USER);
CA_SAME_ENUM(TurnRole::kAssistant, wire::TurnRole::ASSISTANT);
CA_SAME_ENUM(TurnRole::kTool, wire::TurnRole::TOOL);
CA_SAME_ENUM(EpisodeStatus::kCompleted, wire::EpisodeStatus::COMPLETED);
CA_SAME_ENUM(EpisodeStatus::kAborted, wire::EpisodeStatus::ABORTED);
CA_SAME_ENUM(EpisodeStatus::kTruncated, wire::EpisodeStatus::TRUNCATED);
CA_SAME_ENUM(EpisodeStatus::kFailed, wire::EpisodeStatus::FAILED);

constexpr const char* kWhat = "Episode";

void set_turn(wire::Turn::Builder out, const Turn& in) {
  out.setRole(enum_to_wire<wire::TurnRole>(in.role));
  set_values(out.initTokenIds(in.token_ids.size()), in.token_ids);
  set_values(out.initLogprobs(in.logprobs.size()), in.logprobs);
  out.setLossMask(capnp::Data::Reader(in.loss_mask.data(), in.loss_mask.size()));
  auto calls = out.initToolCalls(in.tool_calls.size());
  for (unsigned i = 0; i < in.tool_calls.size(); ++i) {
    calls[i].setCallId(text(in.tool_calls[i].call_id));
    calls[i].setName(text(in.tool_calls[i].name));
    calls[i].setArgumentsJson(text(in.tool_calls[i].arguments_json));
  }
  auto results = out.initToolResults(in.tool_results.size());
  for (unsigned i = 0; i < in.tool_results.size(); ++i) {
    results[i].setCallId(text(in.tool_results[i].call_id));
    results[i].setContent(text(in.tool_results[i].content));
    results[i].setIsError(in.tool_results[i].is_error);
  }
  out.setPolicyVersion(in.policy_version.value());
  out.setWallMs(in.wall_ms);
}

Expected<Turn> get_turn(wire::Turn::Reader in, std::size_t index) {
  Turn out;
  out.role = enum_from_wire(in.getRole(), TurnRole::kTool);
  out.token_ids = get_values<std::uint32_t>(in.getTokenIds());
  out.logprobs = get_values<float>(in.getLogprobs());
  capnp::Data::Reader mask = in.getLossMask();
  out.loss_mask.assign(mask.begin(), mask.end());
  const std::size_t n = out.token_ids.size();
  if (out.loss_mask.size() != n || (!out.logprobs.empty() && out.logprobs.size() != n)) {
    return capnp_io::malformed(std::string(kWhat) + ": turn " + std::to_string(index) + " has " +
                               std::to_string(n) + " tokens but a loss mask of " +
                               std::to_string(out.loss_mask.size()) + " bytes and " +
                               std::to_string(out.logprobs.size()) + " logprobs");
  }
  for (auto c : in.getToolCalls()) {
    out.tool_calls.push_back(
        ToolCall{str(c.getCallId()), str(c.getName()), str(c.getArgumentsJson())});
  }
  for (auto r : in.getToolResults()) {
    out.tool_results.push_back(ToolResult{str(r.getCallId()), str(r.getContent()), r.getIsError()});
  }
  out.policy_version = PolicyVersion{in.getPolicyVersion()};
  out.wall_ms = in.getWallMs();
  return out;
}

}  // namespace

std::string encode_episode(const Episode& episode) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Episode>();
  stamp(root);
  root.setEpisodeId(text(episode.episode_id.value()));
  root.setRunId(text(episode.run_id.value()));
  root.setTaskId(text(episode.task_id.value()));
  root.setStage(static_cast<std::uint8_t>(episode.stage));
  root.setStatus(static_cast<wire::EpisodeStatus>(static_cast<std::uint8_t>(episode.status)));
  root.setFinalReward(episode.final_reward);
  auto counters = root.initCounters();
  counters.setTurns(episode.counters.turns);
  counters.setInvalidToolCalls(episode.counters.invalid_tool_calls);
  counters.setTokens(episode.counters.tokens);
  counters.setWastedLoops(episode.counters.wasted_loops);
  auto turns = root.initTurns(episode.turns.size());
  for (unsigned i = 0; i < episode.turns.size(); ++i) set_turn(turns[i], episode.turns[i]);
  root.setEndedUnixMs(episode.ended_unix_ms);
  return capnp_io::to_bytes(message);
}

Expected<Episode> decode_episode(std::string_view bytes, const DecodeLimits& limits) {
  return capnp_io::read_root<wire::Episode>(
      bytes, limits, kWhat, [](wire::Episode::Reader r) -> Expected<Episode> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        Episode out;
        out.episode_id = EpisodeId{str(r.getEpisodeId())};
        out.run_id = RunId{str(r.getRunId())};
        out.task_id = TaskId{str(r.getTaskId())};
        out.stage = static_cast<EpisodeStage>(r.getStage());
        const auto status = static_cast<std::uint16_t>(r.getStatus());
        if (status > 0xff) {
          return capnp_io::malformed(std::string(kWhat) + ": status " + std::to_string(status) +
                                     " is out of range");
        }
        out.status = static_cast<EpisodeStatus>(status);
        out.final_reward = r.getFinalReward();
        auto counters = r.getCounters();
        out.counters.turns = counters.getTurns();
        out.counters.invalid_tool_calls = counters.getInvalidToolCalls();
        out.counters.tokens = counters.getTokens();
        out.counters.wasted_loops = counters.getWastedLoops();
        auto turns = r.getTurns();
        out.turns.reserve(turns.size());
        for (unsigned i = 0; i < turns.size(); ++i) {
          ASSIGN_OR_RETURN(Turn turn, get_turn(turns[i], i));
          out.turns.push_back(std::move(turn));
        }
        out.ended_unix_ms = r.getEndedUnixMs();
        return out;
      });
}

}  // namespace cuda_agent
