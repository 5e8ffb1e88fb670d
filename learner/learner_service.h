// The learner as a service of the coordinator (issue 24): it trains the steps the coordinator
// names (TrainStep -> StepDone), writes checkpoints when asked (CheckpointRequest ->
// CheckpointDone), and after every step publishes the new weights to the policy engines.
//
//   ASSIGN_OR_RETURN(auto service, LearnerService::create(options, group.get()));
//   LearnerLoop loop(*service, group.get(), {});
//   std::thread rpc([&] { serve_learner(client_options, adapter_over(loop), stop); });  // rank 0
//   RETURN_IF_ERROR(loop.run(stop));   // this thread owns the trainer (and the group)
//
// One step (LearnerService::train):
//   1. catch_up() on the run store, opened read-only as a follower (StoreMode::kSecondary): the
//      coordinator is its only writer and names an episode only once its write is durable;
//   2. read the step's episodes by id (load_sequences); a refused or malformed one is logged by
//      name and skipped, a step whose episodes are all refused fails (learner.no_data);
//   3. the loss by stage: single-turn warm-up and agentic PPO -> Trainer::ppo_step (actor and
//      critic); agent warm-up -> RFT: sft_step on the episodes with a positive reward and no
//      invalid tool call (none: skipped, "rft/skipped" = 1 in the metrics) and value_step on all;
//   4. the weights become version step.version + 1 and are published: written atomically as a
//      Hugging Face directory <out>/policy/v<N> (config.json, model.safetensors and the model's
//      tokenizer files; the newest keep_policy_versions are kept), then POST /v1/weights/load
//      {"path", "version"} to every engine, in parallel, each with a deadline. An engine that
//      fails is logged and counted ("publish/engines_failed"); the step still succeeds, since the
//      engine keeps generating with older weights, which the staleness bound tolerates.
// StepDone.metrics: the StepMetrics figures by name ("loss/policy", "loss/value", "entropy",
// "explained_variance", "tokens/model", "seconds", ...) and "reward/mean", the mean final reward
// of the batch's episodes, so that the coordinator's log shows a reward curve.
//
// Lineage after a restart (catch_up): the learner knows how many of the run's steps its weights
// have trained (0 fresh; a checkpoint records it as "coordinator_step"). A TrainStep carries the
// batches of the steps since the run's latest recorded checkpoint (replay). Behind the step: it
// trains the replayed steps it lacks, on the same episodes in the same order, without publishing,
// then the step; on the CPU in fp32 the weights are then bit-identical to those of a learner that
// never stopped. Ahead of the step (a coordinator restarted before it recorded the learner's last
// step, and formed another batch) or behind the replay: it restores the newest checkpoint the
// replay continues from, then replays. With no such checkpoint it trains the weights it holds.
// Versions: the coordinator's word is the version. A step that starts from another version than
// the learner holds (only after the fallback above) trains the weights it holds and labels them
// step.version + 1 ("version/mismatch" = 1, and a warning): engines refuse versions that are not
// newer, so versions must only go up.
// Idempotence: a TrainStep repeated after its answer was lost (same step, version and episodes)
// gets the same StepDone again without training twice.
//
// Checkpoints: Trainer::save_checkpoint under <out>/checkpoints (keep_checkpoints kept); the
// answer names the sealed directory, its total size and the BLAKE2b-256 (hex) of its CHECKSUMS
// file, which lists the digest of every file. create() resumes from the newest valid checkpoint
// there and, on rank 0, publishes the resumed weights to the engines.
//
// Several ranks (LearnerLoop): only rank 0 talks to the coordinator. It broadcasts every request
// to the other ranks through the LearnerGroup (a JSON command as bytes), every rank trains its
// shard of the same global batch (each reads the episodes from the store itself), and rank 0
// answers and publishes. While idle, rank 0 broadcasts an idle command every idle_tick, so the
// other ranks, blocked in that broadcast, never reach the collective deadline between steps.
//
// Threading: a LearnerService belongs to one thread (the one that runs LearnerLoop::run).
// LearnerLoop::train / checkpoint may be called from any thread; they hand the request to that
// thread and wait for its answer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "learner/trainer.h"
#include "messages/coordinator_protocol.h"

namespace cuda_agent {

class LearnerGroup;
class RunStore;

struct LearnerServiceOptions {
  /// The run store's directory, opened as a follower of the coordinator (the writer). Required.
  std::string store_dir;
  /// The run whose episodes the steps name. Required.
  RunId run;
  /// The actor's Hugging Face directory (the policy the run starts from). Required.
  std::string model_dir;
  /// The critic's backbone (+ value_head.safetensors). Empty: a copy of the actor with a zero
  /// value head. Default: empty.
  std::string critic_dir;
  /// Checkpoints go to <out_dir>/checkpoints (unless checkpoint_dir), published weights to
  /// <out_dir>/policy. Required.
  std::string out_dir;
  /// Where checkpoints are written and resumed from ([run] checkpoint_dir). Empty:
  /// <out_dir>/checkpoints.
  std::string checkpoint_dir;
  std::string checkpoints() const {
    return checkpoint_dir.empty() ? out_dir + "/checkpoints" : checkpoint_dir;
  }
  /// "cpu", "cuda" or "cuda:N". Default: cpu.
  std::string device = "cpu";
  /// "fp32" / "bf16"; empty: config.json's torch_dtype. Default: empty.
  std::string dtype;
  /// The trainer's settings (model_dir is set from model_dir above; keep_checkpoints is the
  /// number of checkpoints kept under <out_dir>/checkpoints).
  TrainerOptions trainer;
  /// Longest episode accepted, in tokens (longer ones are refused by name). 0: unlimited.
  std::int64_t max_sequence_tokens = 0;
  /// Policy engines (cuda-agent-engine) to push each new version to: "http://host:port" (a path
  /// after the port is ignored: /v1/weights/load is on the server's root). Default: none.
  std::vector<std::string> engine_urls;
  /// Deadline of one engine's weight load (connect + load + answer). Default: 5 minutes.
  std::chrono::milliseconds engine_timeout{300'000};
  /// Published version directories kept under <out_dir>/policy (at least 1). Default: 2.
  std::size_t keep_policy_versions = 2;
  /// After a resume, push the resumed weights to the engines (rank 0). Default: true.
  bool publish_on_resume = true;
  /// Passes of value pretraining over each agent warm-up batch ([learner] value_epochs). Default 1.
  std::int64_t value_epochs = 1;
};

/// What one publication did.
struct PublishReport {
  std::string path;  ///< the version's directory (absolute)
  std::uint64_t version = 0;
  std::size_t engines_ok = 0;
  std::size_t engines_failed = 0;
  double seconds = 0;  ///< writing the directory and every engine's load
};

class LearnerService {
 public:
  /// Loads actor and critic, opens the store (kSecondary), builds the trainer and resumes from
  /// the newest checkpoint under <out_dir>/checkpoints if there is one (then, on rank 0 and with
  /// publish_on_resume, publishes it). `group` may be null (one rank) and must outlive the
  /// service. Errors: bad options (kInvalidInput "learner.bad_options"), those of
  /// Transformer::load, RunStore::open, Trainer::create and restore_checkpoint.
  static Expected<std::unique_ptr<LearnerService>> create(const LearnerServiceOptions& options,
                                                          LearnerGroup* group);
  ~LearnerService();
  LearnerService(const LearnerService&) = delete;
  LearnerService& operator=(const LearnerService&) = delete;

  /// Trains one step (see the top of this file). Collective with several ranks. Errors:
  /// kInvalidInput "learner.bad_stage" (kEvaluation or an unknown stage), kNotFound
  /// "learner.no_data" (every episode refused), the store's I/O errors, the trainer's.
  Expected<StepDone> train(const TrainStep& step);
  /// Writes a checkpoint of the current weights. Collective. Errors: kInvalidInput
  /// "learner.version_mismatch" when the learner does not hold request.version; checkpoint.*.
  Expected<CheckpointDone> checkpoint(const CheckpointRequest& request);
  /// Writes the current weights as <out>/policy/v<version> and posts them to every engine. Rank 0
  /// only (on other ranks: an empty report). Errors: only writing the directory (engines that
  /// fail are counted and logged).
  Expected<PublishReport> publish();

  /// The policy version the actor's weights are.
  std::uint64_t policy_version() const;
  /// True when create() restored a checkpoint.
  bool resumed() const { return resumed_; }
  int rank() const;
  const Trainer& trainer() const { return *trainer_; }
  const LearnerServiceOptions& options() const { return options_; }

 private:
  LearnerService() = default;
  Status catch_up(const TrainStep& step);
  Expected<StepDone> train_uncached(const TrainStep& step, bool publish_weights);
  LearnerServiceOptions options_;
  LearnerGroup* group_ = nullptr;
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<Trainer> trainer_;
  bool resumed_ = false;
  // The run's steps the weights held have trained (the coordinator's count; the trainer's steps()
  // counts optimizer steps). Unset: unknown (a checkpoint written without it).
  std::optional<std::uint64_t> run_steps_ = 0;
  std::optional<TrainStep> last_step_;  // the last step answered, and its answer (idempotence)
  StepDone last_done_;
};

/// What rank 0 broadcasts to the other ranks.
struct LearnerCommand {
  enum class Kind : std::uint8_t { kIdle = 0, kTrain = 1, kCheckpoint = 2, kStop = 3 };
  Kind kind = Kind::kIdle;
  TrainStep step;                ///< kTrain
  CheckpointRequest checkpoint;  ///< kCheckpoint
};
/// A small JSON text; decode refuses anything else with kInvalidInput "learner.bad_command".
std::string encode_learner_command(const LearnerCommand& command);
Expected<LearnerCommand> decode_learner_command(std::string_view bytes);

struct LearnerLoopOptions {
  /// Rank 0 broadcasts an idle command when no request came for this long (with several ranks),
  /// so that the others' broadcast never misses the group's collective deadline: keep it well
  /// under LearnerGroupOptions::timeout. Default: 30 s.
  std::chrono::milliseconds idle_tick{30'000};
  /// How long train() / checkpoint() wait for their answer. Default: 4 hours.
  std::chrono::milliseconds request_deadline{4 * 3'600'000};
};

/// Runs the service's requests on the thread that calls run(), and (with several ranks) keeps
/// the ranks in step. Threading: run() on one thread; train() / checkpoint() from any other.
class LearnerLoop {
 public:
  /// `service` and `group` (may be null) must outlive the loop.
  LearnerLoop(LearnerService& service, LearnerGroup* group, LearnerLoopOptions options);

  /// Rank 0: queues the request for run() and waits for its answer. Errors: kUnavailable
  /// "learner.stopping" once run() has returned or is stopping; kTimeout "learner.deadline"
  /// past request_deadline.
  Expected<StepDone> train(const TrainStep& step);
  Expected<CheckpointDone> checkpoint(const CheckpointRequest& request);

  /// Rank 0: runs queued requests until `stop`, then broadcasts kStop. Other ranks: run what
  /// rank 0 broadcasts until it says kStop (or `stop` is set while idle). `on_step` (may be
  /// empty) is called on this thread after every step, on every rank. Returns an error when a
  /// collective failed (the group is broken: restart the learner group) or a command from rank
  /// 0 did not decode.
  Status run(const std::atomic<bool>& stop,
             const std::function<void(const TrainStep&, const Expected<StepDone>&)>& on_step = {});

  struct Pending;  // one queued request and its answer (learner_service.cpp)

 private:
  Expected<LearnerCommand> exchange(const LearnerCommand* command);  // broadcast from rank 0
  void execute(const LearnerCommand& c, Pending* p,
               const std::function<void(const TrainStep&, const Expected<StepDone>&)>& on_step);
  std::shared_ptr<Pending> submit(LearnerCommand command);
  LearnerService& service_;
  LearnerGroup* group_;
  LearnerLoopOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Pending>> queue_;
  bool closed_ = false;
};

}  // namespace cuda_agent
