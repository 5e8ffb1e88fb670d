# The trajectory protocol: one finished agent episode, token in, token out (DESIGN.md section 6),
# as a rollout worker sends it to the coordinator's store and as the store keeps it.
# Add-only once released: new fields get new ordinals at the end; nothing is renamed, renumbered or
# removed. Codec: messages/trajectory_codec.h.
@0x868e59c923705212;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

# How an episode ended. Same numbering as the run store's (store.capnp, EpisodeSummary.status).
enum EpisodeStatus {
  completed @0;  # the agent called finish (or ran out of work); the final evaluation ran
  aborted @1;    # stopped from outside (drain, stop command, worker lost) before it ended
  truncated @2;  # a budget ran out (turns, context tokens, wall time); the final evaluation ran
  failed @3;     # an infrastructure error ended it; not for training
}

# Who produced a turn's tokens.
enum TurnRole {
  unknown @0;    # a role newer than this build
  system @1;     # the system prompt
  user @2;       # the task prompt
  assistant @3;  # sampled from the policy: the only tokens the loss sees
  tool @4;       # tool results fed back to the model
}

# A tool call the model made in an assistant turn.
struct ToolCall {
  callId @0 :Text;         # id the matching ToolResult names
  name @1 :Text;           # tool name, e.g. "compile", "write_file"
  argumentsJson @2 :Text;  # the arguments as the model wrote them (JSON text, maybe invalid)
}

# The result of one tool call, in a tool turn.
struct ToolResult {
  callId @0 :Text;   # ToolCall.callId it answers
  content @1 :Text;  # what the model was shown
  isError @2 :Bool;  # the call failed (bad arguments, unknown tool, tool error)
}

# One turn: a contiguous run of tokens with one role.
struct Turn {
  role @0 :TurnRole;             # who produced the tokens
  tokenIds @1 :List(UInt32);     # exact token ids, never re-tokenized
  logprobs @2 :List(Float32);    # sampling logprob per token; empty for turns not sampled
  lossMask @3 :Data;             # one byte per token id: 1 trained on (model tokens), 0 not
  toolCalls @4 :List(ToolCall);  # calls parsed from an assistant turn, in order
  toolResults @5 :List(ToolResult);  # results in a tool turn, in order
  policyVersion @6 :UInt64;      # weights version that sampled the turn (in force, if not sampled)
  wallMs @7 :UInt64;             # wall-clock ms: generation (model turns) or tool run (tool turns)
}

# Counters kept while the episode ran.
struct EpisodeCounters {
  turns @0 :UInt32;             # model turns taken
  invalidToolCalls @1 :UInt32;  # calls that did not parse or named no tool
  tokens @2 :UInt64;            # tokens of all turns (prompt, sampled, tool output)
  wastedLoops @3 :UInt32;       # repeated identical actions with no progress
}

# One episode.
struct Episode {
  schemaId @0 :UInt64;         # this struct's type id; a frame of another type is rejected
  formatVersion @1 :UInt16;    # the sender's Common.formatVersion
  episodeId @2 :Text;          # unique within the run
  runId @3 :Text;              # the run it belongs to
  taskId @4 :Text;             # the task it attempted
  stage @5 :UInt8;             # 0 evaluation, 1 single-turn warm-up, 2 agent warm-up, 3 agentic PPO
  status @6 :EpisodeStatus;    # how it ended
  finalReward @7 :Float64;     # reward of the fresh final evaluation; 0 when none ran
  counters @8 :EpisodeCounters; # counters kept while it ran
  turns @9 :List(Turn);        # in order
  endedUnixMs @10 :Int64;      # when the episode ended, ms since the Unix epoch (UTC)
}
