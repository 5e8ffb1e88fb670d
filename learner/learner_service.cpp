// LearnerService and LearnerLoop: see learner_service.h for the step, the publication and the
// ranks' protocol.
#include "learner/learner_service.h"

#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/content_hash.h"
#include "core/log.h"
#include "learner/checkpoint.h"
#include "learner/episode_source.h"
#include "learner/learner_group.h"
#include "storage/run_store.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

Error bad_options(const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, "learner.bad_options", message);
}

Error io_error(const std::string& what, const std::string& path, int err) {
  return make_error(ErrorCategory::kIo, "learner.io",
                    what + " " + path + ": " + std::strerror(err));
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Expected<at::Device> parse_device(const std::string& d) {
  if (d == "cpu") return at::Device(at::kCPU);
  if (d.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available())
      return make_error(ErrorCategory::kUnavailable, "learner.no_gpu",
                        "device " + d + ": no GPU visible to libtorch");
    try {
      return at::Device(d);
    } catch (const std::exception&) {
    }
  }
  return bad_options("device: cpu, cuda or cuda:N (got '" + d + "')");
}

// fsync of one file or directory: a published version must survive a crash once it is named.
Status sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return io_error("opening", path, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return io_error("fsync of", path, err);
  return Status::ok();
}

Status sync_tree(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const bool is_dir = e.is_directory(ec);
    RETURN_IF_ERROR(sync_path(e.path().string(), is_dir));
  }
  if (ec) return io_error("listing", dir, ec.value());
  return sync_path(dir, true);
}

// The files beside the weights that make a published version a complete model directory (the
// engine itself reads only config.json and the weights).
constexpr const char* kModelSideFiles[] = {"tokenizer.json",
                                           "tokenizer_config.json",
                                           "special_tokens_map.json",
                                           "generation_config.json",
                                           "vocab.json",
                                           "merges.txt"};

// "v12" -> 12; anything else -> nullopt.
std::optional<std::uint64_t> version_of_dir(const std::string& name) {
  if (name.size() < 2 || name[0] != 'v') return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + std::uint64_t(name[i] - '0');
  }
  return v;
}

// "http://host:port/v1" -> "http://host:port": the weights endpoint is on the server's root.
std::string server_root(const std::string& url) {
  const std::size_t scheme = url.find("://");
  const std::size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

// Posts one version to one engine; an empty optional means it loaded.
std::optional<std::string> post_weights(const std::string& url, const std::string& path,
                                        std::uint64_t version, std::chrono::milliseconds timeout) {
  try {
    httplib::Client client(server_root(url));
    client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(
        std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(10))));
    client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    client.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    const std::string body = json{{"path", path}, {"version", version}}.dump();
    httplib::Result r = client.Post("/v1/weights/load", body, "application/json");
    if (!r) return "no answer (" + httplib::to_string(r.error()) + ")";
    if (r->status == 200) return std::nullopt;
    std::string text = r->body.substr(0, 400);
    return "HTTP " + std::to_string(r->status) + ": " + text;
  } catch (const std::exception& e) {
    return std::string("client error: ") + e.what();
  }
}

void put_common(std::map<std::string, double>& out, const StepMetrics& m) {
  out["tokens/model"] += m.model_tokens;
  out["tokens/total"] += m.total_tokens;
  out["seconds"] += m.seconds;
}

std::map<std::string, double> ppo_metrics(const StepMetrics& m) {
  std::map<std::string, double> out{{"loss/policy", m.loss},
                                    {"loss/value", m.value_loss},
                                    {"entropy", m.entropy},
                                    {"clip_fraction", m.clip_fraction},
                                    {"approx_kl", m.approx_kl},
                                    {"importance_capped", m.importance_capped},
                                    {"logprob_delta/behaviour", m.behaviour_delta},
                                    {"grad_norm/actor", m.grad_norm},
                                    {"explained_variance", m.explained_variance},
                                    {"staleness/mean", m.mean_staleness},
                                    {"tokens_per_s", m.tokens_per_s},
                                    {"actor/skipped", m.actor_skipped ? 1.0 : 0.0}};
  if (m.ungrouped > 0) out["advantage/ungrouped"] = double(m.ungrouped);
  if (m.kl_penalty) out["kl/reference"] = m.kl_reference;
  put_common(out, m);
  return out;
}

bool is_training_stage(EpisodeStage s) {
  return s == EpisodeStage::kSingleTurnWarmup || s == EpisodeStage::kAgentWarmup ||
         s == EpisodeStage::kAgenticPpo;
}

// The run's steps a checkpoint's weights have trained: "coordinator_step" in its
// trainer_state.json (LearnerService::checkpoint writes it); unset for one written without it.
std::optional<std::uint64_t> coordinator_step_of(const json& trainer_state) {
  const auto it = trainer_state.find("coordinator_step");
  if (it == trainer_state.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

}  // namespace

LearnerService::~LearnerService() = default;

int LearnerService::rank() const { return group_ != nullptr ? group_->rank() : 0; }

std::uint64_t LearnerService::policy_version() const { return trainer_->policy_version(); }

Expected<std::unique_ptr<LearnerService>> LearnerService::create(const LearnerServiceOptions& o,
                                                                 LearnerGroup* group) {
  if (o.store_dir.empty()) return bad_options("store_dir is required");
  if (o.run.value().empty()) return bad_options("run is required");
  if (o.model_dir.empty()) return bad_options("model_dir is required");
  if (o.out_dir.empty()) return bad_options("out_dir is required");
  if (o.keep_policy_versions < 1) return bad_options("keep_policy_versions must be at least 1");
  for (const std::string& url : o.engine_urls)
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      return bad_options("engine url '" + url + "' must start with http:// or https://");
  std::unique_ptr<LearnerService> s(new LearnerService());
  s->options_ = o;
  s->options_.trainer.model_dir = o.model_dir;
  s->group_ = group;

  ASSIGN_OR_RETURN(at::Device device, parse_device(o.device));
  LoadOptions lo{.device = device};
  if (!o.dtype.empty()) {
    ASSIGN_OR_RETURN(at::ScalarType t, parse_dtype_name(o.dtype));
    lo.dtype = t;
  }
  ASSIGN_OR_RETURN(Transformer actor, Transformer::load(o.model_dir, lo));
  const std::string critic_dir = o.critic_dir.empty() ? o.model_dir : o.critic_dir;
  ASSIGN_OR_RETURN(Transformer backbone, Transformer::load(critic_dir, lo));
  std::optional<Critic> critic;
  try {
    auto opts = at::TensorOptions().dtype(backbone.dtype()).device(backbone.device());
    ValueHead head = ValueHead::zeros(backbone.config().hidden_size, opts);
    const std::string head_path = critic_dir + "/value_head.safetensors";
    if (fs::exists(head_path)) {
      ASSIGN_OR_RETURN(head, ValueHead::load(head_path, opts));
    }
    critic = Critic{std::move(backbone), std::move(head)};
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.torch",
                      std::string("making the critic: ") + e.what());
  }

  StoreOptions so;
  so.dir = o.store_dir;
  ASSIGN_OR_RETURN(s->store_, RunStore::open(so, StoreMode::kSecondary));
  ASSIGN_OR_RETURN(s->trainer_, Trainer::create(std::move(actor), std::move(critic),
                                                s->options_.trainer, group));
  ASSIGN_OR_RETURN(std::optional<json> restored, s->trainer_->restore_checkpoint(o.checkpoints()));
  if (restored) {
    s->resumed_ = true;
    s->run_steps_ = coordinator_step_of(*restored);
    log_info("learner resumed from a checkpoint",
             {{"dir", o.checkpoints()},
              {"step", std::to_string(s->trainer_->steps())},
              {"version", std::to_string(s->trainer_->policy_version())}});
    if (o.publish_on_resume && s->rank() == 0) {
      ASSIGN_OR_RETURN(PublishReport r, s->publish());
      (void)r;
    }
  }
  return s;
}

Expected<StepDone> LearnerService::train(const TrainStep& step) {
  // The coordinator repeats a step whose answer it did not get: the same answer, trained once.
  if (last_step_ && last_step_->step == step.step && last_step_->version == step.version &&
      last_step_->stage == step.stage && last_step_->episodes == step.episodes) {
    log_info("learner step repeated: answering it again without training",
             {{"step", std::to_string(step.step)}});
    return last_done_;
  }
  RETURN_IF_ERROR(catch_up(step));
  ASSIGN_OR_RETURN(StepDone done, train_uncached(step, /*publish_weights=*/true));
  last_step_ = step;
  last_done_ = done;
  return done;
}

namespace {

// Whether `replay` holds every step from `from` up to (not including) `to`.
bool replay_covers(const std::vector<RecordedStep>& replay, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t k = from; k < to; ++k) {
    if (std::none_of(replay.begin(), replay.end(),
                     [&](const RecordedStep& r) { return r.step == k; }))
      return false;
  }
  return true;
}

}  // namespace

Status LearnerService::catch_up(const TrainStep& step) {
  if (!run_steps_) return Status::ok();  // a checkpoint without the run's step: nothing to match
  if (*run_steps_ == step.step) return Status::ok();
  auto fits = [&](std::uint64_t from) {
    return from <= step.step && replay_covers(step.replay, from, step.step);
  };
  if (!fits(*run_steps_)) {
    // Ahead of the step (the coordinator restarted before recording ours and formed another
    // batch), or behind what the replay covers: back to the newest checkpoint it continues from.
    const std::uint64_t held = *run_steps_;
    Expected<std::optional<json>> r =
        trainer_->restore_checkpoint(options_.checkpoints(), [&](const json& state) {
          const std::optional<std::uint64_t> c = coordinator_step_of(state);
          return c && fits(*c);
        });
    if (!r || !*r) {
      // Nothing to go back to: train the weights held, as the mismatch metric will say.
      log_warn("learner: no checkpoint to rejoin the run's lineage from; training the weights held",
               {{"held_step", std::to_string(held)},
                {"step", std::to_string(step.step)},
                {"why", r ? std::string("no checkpoint") : r.error().to_string()}});
      run_steps_.reset();
      return Status::ok();
    }
    run_steps_ = coordinator_step_of(**r);
    last_step_.reset();
    log_info("learner: rewound to a checkpoint to rejoin the run's lineage",
             {{"held_step", std::to_string(held)},
              {"checkpoint_step", std::to_string(*run_steps_)},
              {"step", std::to_string(step.step)}});
  }
  for (const RecordedStep& r : step.replay) {
    if (r.step < *run_steps_ || r.step >= step.step) continue;
    if (r.step != *run_steps_) break;  // fits() checked it; a duplicate step would land here
    const auto t0 = Clock::now();
    TrainStep again{r.step, r.stage, r.version, r.episodes, {}};
    ASSIGN_OR_RETURN(StepDone done, train_uncached(again, /*publish_weights=*/false));
    log_info("learner: replayed a step of the run to rejoin its lineage",
             {{"step", std::to_string(r.step)},
              {"version", std::to_string(done.new_version.value())},
              {"seconds", std::to_string(seconds_since(t0))}});
  }
  return Status::ok();
}

Expected<StepDone> LearnerService::train_uncached(const TrainStep& step, bool publish_weights) {
  const auto t0 = Clock::now();
  if (!is_training_stage(step.stage))
    return make_error(ErrorCategory::kInvalidInput, "learner.bad_stage",
                      "step " + std::to_string(step.step) + ": stage " + to_string(step.stage) +
                          " is not a training stage");
  if (step.episodes.empty())
    return make_error(ErrorCategory::kInvalidInput, "learner.no_data",
                      "step " + std::to_string(step.step) + " names no episodes");
  // 1. The store as the coordinator last wrote it.
  RETURN_IF_ERROR(store_->catch_up());
  // 2. The episodes, by id. A missing one is looked for once more after another catch_up (its
  // write is durable, but this follower may have caught up just before it), then refused.
  std::vector<EpisodeSummary> picked;
  std::vector<Error> refused;
  bool caught_up_again = false;
  for (const EpisodeId& id : step.episodes) {
    Expected<EpisodeSummary> s = store_->get_episode_summary(options_.run, id);
    if (!s && s.error().category == ErrorCategory::kNotFound && !caught_up_again) {
      RETURN_IF_ERROR(store_->catch_up());
      caught_up_again = true;
      s = store_->get_episode_summary(options_.run, id);
    }
    if (!s) {
      if (s.error().category == ErrorCategory::kIo) return s.error();
      refused.push_back(s.error().with_context("episode '" + id.value() + "'"));
      continue;
    }
    picked.push_back(std::move(s).value());
  }
  const SequenceLimits limits{.vocab_size = trainer_->actor().config().vocab_size,
                              .max_tokens = options_.max_sequence_tokens};
  ASSIGN_OR_RETURN(LoadedSequences loaded, load_sequences(*store_, picked, limits));
  for (Error& e : loaded.refused) refused.push_back(std::move(e));
  for (const Error& e : refused)
    log_warn("learner: episode refused",
             {{"step", std::to_string(step.step)}, {"reason", e.to_string()}});
  if (loaded.sequences.empty())
    return make_error(
        ErrorCategory::kNotFound, "learner.no_data",
        "step " + std::to_string(step.step) + ": every one of its " +
            std::to_string(step.episodes.size()) + " episodes was refused" +
            (refused.empty() ? std::string() : " (first: " + refused[0].message + ")"));

  const std::uint64_t held = trainer_->policy_version();
  const bool mismatch = held != step.version.value();
  if (mismatch) {
    log_warn(
        "learner: the step starts from another version than the learner holds; training the "
        "weights held, labelled with the coordinator's version",
        {{"step", std::to_string(step.step)},
         {"held", std::to_string(held)},
         {"coordinator", std::to_string(step.version.value())}});
  }
  trainer_->set_policy_version(step.version.value());

  // 3. The loss by stage.
  StepDone done{.step = step.step, .new_version = PolicyVersion{step.version.value() + 1}};
  std::map<std::string, double>& m = done.metrics;
  if (step.stage == EpisodeStage::kAgentWarmup) {
    std::vector<TrainSequence> positive;
    // load_sequences keeps the picked order, so a sequence's selection is found by its episode id.
    const std::vector<bool> keep = rft_selection(picked, options_.trainer.group_advantages);
    std::set<std::string> selected;
    for (std::size_t i = 0; i < picked.size(); ++i)
      if (keep[i]) selected.insert(picked[i].episode_id.value());
    for (const TrainSequence& seq : loaded.sequences)
      if (selected.count(seq.episode.value())) positive.push_back(seq);
    m["rft/sequences"] = double(positive.size());
    m["rft/skipped"] = positive.empty() ? 1.0 : 0.0;
    if (positive.empty()) {
      log_info(
          "learner: no episode of this batch qualifies for RFT (positive, no invalid tool call "
          "or wasted loop, best of its task with group advantages); RFT skipped, value "
          "pretraining only",
          {{"step", std::to_string(step.step)}});
    } else {
      ASSIGN_OR_RETURN(StepMetrics sft, trainer_->sft_step(positive));
      m["loss/rft"] = sft.loss;
      m["entropy"] = sft.entropy;
      m["grad_norm/actor"] = sft.grad_norm;
      put_common(m, sft);
    }
    // Value pretraining: value_epochs passes over the batch. explained_variance is the critic's
    // before the first (on episodes it has not seen), explained_variance/last before the last.
    for (std::int64_t e = 0; e < std::max<std::int64_t>(1, options_.value_epochs); ++e) {
      ASSIGN_OR_RETURN(StepMetrics value, trainer_->value_step(loaded.sequences));
      if (e == 0) m["explained_variance"] = value.explained_variance;
      if (e > 0) m["explained_variance/last"] = value.explained_variance;
      m["loss/value"] = value.value_loss;
      m["grad_norm/critic"] = value.grad_norm;
      put_common(m, value);
    }
  } else {
    ASSIGN_OR_RETURN(StepMetrics ppo, trainer_->ppo_step(loaded.sequences));
    m = ppo_metrics(ppo);
  }
  trainer_->set_policy_version(done.new_version.value());
  double reward = 0;
  for (const TrainSequence& s : loaded.sequences) reward += s.reward;
  m["reward/mean"] = reward / double(loaded.sequences.size());
  m["episodes/trained"] = double(loaded.sequences.size());
  m["episodes/refused"] = double(refused.size());
  m["version/mismatch"] = mismatch ? 1.0 : 0.0;

  run_steps_ = step.step + 1;

  // 4. Publication (rank 0): the engines' failures do not fail the step.
  if (publish_weights && rank() == 0) {
    ASSIGN_OR_RETURN(PublishReport r, publish());
    m["publish/seconds"] = r.seconds;
    m["publish/engines_ok"] = double(r.engines_ok);
    m["publish/engines_failed"] = double(r.engines_failed);
  }
  m["step/seconds"] = seconds_since(t0);
  return done;
}

Expected<CheckpointDone> LearnerService::checkpoint(const CheckpointRequest& request) {
  if (request.version.value() != trainer_->policy_version())
    return make_error(ErrorCategory::kInvalidInput, "learner.version_mismatch",
                      "checkpoint of step " + std::to_string(request.step) +
                          ": the learner holds "
                          "version " +
                          std::to_string(trainer_->policy_version()) +
                          ", the coordinator asked for version " +
                          std::to_string(request.version.value()));
  const std::string root = options_.checkpoints();
  const std::string stage = last_step_ ? to_string(last_step_->stage) : std::string();
  RETURN_IF_ERROR(trainer_->save_checkpoint(
      root, {{"stage", stage}, {"coordinator_step", request.step}, {"run", options_.run.value()}}));
  CheckpointDone done{.step = request.step};
  if (rank() != 0) return done;
  done.path = fs::absolute(root + "/" + checkpoint_dir_name(trainer_->steps())).string();
  // CHECKSUMS lists every other file's digest and size: its own digest covers the checkpoint.
  const std::string sums_path = done.path + "/CHECKSUMS";
  std::ifstream in(sums_path, std::ios::binary);
  if (!in) return io_error("reading", sums_path, errno);
  const std::string sums((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  done.checksum = content_hash(sums);
  done.size_bytes = sums.size();
  std::istringstream lines(sums);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string digest;
    std::uint64_t size = 0;
    if (fields >> digest >> size) done.size_bytes += size;
  }
  return done;
}

Expected<PublishReport> LearnerService::publish() {
  PublishReport report;
  report.version = trainer_->policy_version();
  if (rank() != 0) return report;
  const auto t0 = Clock::now();
  const fs::path root = fs::absolute(options_.out_dir + "/policy");
  const std::string name = "v" + std::to_string(report.version);
  const fs::path final_dir = root / name;
  const fs::path tmp = root / (".tmp-" + name + "-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return io_error("creating", root.string(), ec.value());
  fs::remove_all(tmp, ec);
  // Written beside its final name and renamed once complete and synced: an engine never reads a
  // half-written version, and a crash leaves at worst a .tmp-* directory.
  RETURN_IF_ERROR(trainer_->actor().save(tmp.string()));
  for (const char* side : kModelSideFiles) {
    const fs::path from = fs::path(options_.model_dir) / side;
    if (!fs::is_regular_file(from, ec)) continue;
    fs::copy_file(from, tmp / side, fs::copy_options::overwrite_existing, ec);
    if (ec) return io_error("copying", from.string(), ec.value());
  }
  RETURN_IF_ERROR(sync_tree(tmp.string()));
  if (fs::exists(final_dir, ec)) {
    // The same version published before a crash: replaced whole.
    const fs::path old = root / (".old-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(old, ec);
    fs::rename(final_dir, old, ec);
    if (ec) return io_error("moving aside", final_dir.string(), ec.value());
    fs::rename(tmp, final_dir, ec);
    if (ec) return io_error("renaming into", final_dir.string(), ec.value());
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp, final_dir, ec);
    if (ec) return io_error("renaming into", final_dir.string(), ec.value());
  }
  RETURN_IF_ERROR(sync_path(root.string(), true));
  report.path = final_dir.string();

  // Every engine loads in parallel; each has its own deadline.
  const std::vector<std::string>& urls = options_.engine_urls;
  std::vector<std::optional<std::string>> failures(urls.size());
  std::vector<std::thread> posts;
  for (std::size_t i = 0; i < urls.size(); ++i)
    posts.emplace_back([&, i] {
      failures[i] = post_weights(urls[i], report.path, report.version, options_.engine_timeout);
    });
  for (std::thread& t : posts) t.join();
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (!failures[i]) {
      ++report.engines_ok;
      continue;
    }
    ++report.engines_failed;
    log_warn(
        "learner: an engine did not load the new weights; it keeps generating with older "
        "ones",
        {{"engine", urls[i]},
         {"version", std::to_string(report.version)},
         {"reason", *failures[i]}});
  }

  // Keep the newest versions; older ones are no engine's to load any more.
  std::vector<std::pair<std::uint64_t, fs::path>> versions;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (auto v = version_of_dir(e.path().filename().string()); v && e.is_directory())
      versions.emplace_back(*v, e.path());
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = options_.keep_policy_versions; i < versions.size(); ++i)
    fs::remove_all(versions[i].second, ec);
  report.seconds = seconds_since(t0);
  return report;
}

// --- the ranks' commands -------------------------------------------------------------------------

std::string encode_learner_command(const LearnerCommand& c) {
  json j{{"kind", int(c.kind)}};
  if (c.kind == LearnerCommand::Kind::kTrain) {
    auto step_json = [](std::uint64_t step, EpisodeStage stage, PolicyVersion version,
                        const std::vector<EpisodeId>& episodes) {
      json ids = json::array();
      for (const EpisodeId& id : episodes) ids.push_back(id.value());
      return json{{"step", step},
                  {"stage", int(stage)},
                  {"version", version.value()},
                  {"episodes", std::move(ids)}};
    };
    j["step"] = step_json(c.step.step, c.step.stage, c.step.version, c.step.episodes);
    json replay = json::array();
    for (const RecordedStep& r : c.step.replay)
      replay.push_back(step_json(r.step, r.stage, r.version, r.episodes));
    j["step"]["replay"] = std::move(replay);
  } else if (c.kind == LearnerCommand::Kind::kCheckpoint) {
    j["checkpoint"] = {{"step", c.checkpoint.step}, {"version", c.checkpoint.version.value()}};
  }
  return j.dump();
}

Expected<LearnerCommand> decode_learner_command(std::string_view bytes) {
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCategory::kInvalidInput, "learner.bad_command",
                      "a learner command from rank 0: " + what);
  };
  const json j = json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  try {
    LearnerCommand c;
    const int kind = j.at("kind").get<int>();
    if (kind < 0 || kind > 3) return bad("unknown kind " + std::to_string(kind));
    c.kind = LearnerCommand::Kind(kind);
    if (c.kind == LearnerCommand::Kind::kTrain) {
      const json& s = j.at("step");
      c.step.step = s.at("step").get<std::uint64_t>();
      c.step.stage = EpisodeStage(s.at("stage").get<std::uint8_t>());
      c.step.version = PolicyVersion{s.at("version").get<std::uint64_t>()};
      for (const json& id : s.at("episodes"))
        c.step.episodes.push_back(EpisodeId{id.get<std::string>()});
      for (const json& r : s.at("replay")) {
        RecordedStep step{.step = r.at("step").get<std::uint64_t>(),
                          .stage = EpisodeStage(r.at("stage").get<std::uint8_t>()),
                          .version = PolicyVersion{r.at("version").get<std::uint64_t>()}};
        for (const json& id : r.at("episodes"))
          step.episodes.push_back(EpisodeId{id.get<std::string>()});
        c.step.replay.push_back(std::move(step));
      }
    } else if (c.kind == LearnerCommand::Kind::kCheckpoint) {
      const json& s = j.at("checkpoint");
      c.checkpoint.step = s.at("step").get<std::uint64_t>();
      c.checkpoint.version = PolicyVersion{s.at("version").get<std::uint64_t>()};
    }
    return c;
  } catch (const std::exception& e) {
    return bad(e.what());
  }
}

// --- LearnerLoop ---------------------------------------------------------------------------------

struct LearnerLoop::Pending {
  LearnerCommand command;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<Expected<StepDone>> step;
  std::optional<Expected<CheckpointDone>> checkpoint;

  void finish(std::optional<Expected<StepDone>> s, std::optional<Expected<CheckpointDone>> c) {
    std::lock_guard lk(mu);
    step = std::move(s);
    checkpoint = std::move(c);
    done = true;
    cv.notify_all();
  }
};

LearnerLoop::LearnerLoop(LearnerService& service, LearnerGroup* group, LearnerLoopOptions options)
    : service_(service), group_(group), options_(options) {}

std::shared_ptr<LearnerLoop::Pending> LearnerLoop::submit(LearnerCommand command) {
  auto p = std::make_shared<Pending>();
  p->command = std::move(command);
  std::lock_guard lk(mu_);
  if (closed_) return nullptr;
  queue_.push_back(p);
  cv_.notify_all();
  return p;
}

namespace {

Error stopping() {
  return make_error(ErrorCategory::kUnavailable, "learner.stopping",
                    "the learner is stopping: the request was not run");
}

template <class T>
Expected<T> wait_for_answer(const std::shared_ptr<LearnerLoop::Pending>& p,
                            std::optional<Expected<T>> LearnerLoop::Pending::*field,
                            std::chrono::milliseconds deadline) {
  std::unique_lock lk(p->mu);
  if (!p->cv.wait_for(lk, deadline, [&] { return p->done; }))
    return make_error(
        ErrorCategory::kTimeout, "learner.deadline",
        "the learner did not answer within " + std::to_string(deadline.count()) + " ms");
  if (!((*p).*field)) return stopping();
  return *((*p).*field);
}

}  // namespace

Expected<StepDone> LearnerLoop::train(const TrainStep& step) {
  auto p = submit({.kind = LearnerCommand::Kind::kTrain, .step = step});
  if (!p) return stopping();
  return wait_for_answer(p, &Pending::step, options_.request_deadline);
}

Expected<CheckpointDone> LearnerLoop::checkpoint(const CheckpointRequest& request) {
  auto p = submit({.kind = LearnerCommand::Kind::kCheckpoint, .checkpoint = request});
  if (!p) return stopping();
  return wait_for_answer(p, &Pending::checkpoint, options_.request_deadline);
}

Expected<LearnerCommand> LearnerLoop::exchange(const LearnerCommand* command) {
  if (group_ == nullptr || group_->world_size() == 1) return *command;
  try {
    const at::Device device = service_.trainer().actor().device();
    const auto longs = at::TensorOptions().dtype(at::kLong).device(device);
    if (group_->rank() == 0) {
      const std::string bytes = encode_learner_command(*command);
      std::vector<at::Tensor> size{at::full({1}, std::int64_t(bytes.size()), longs)};
      RETURN_IF_ERROR(group_->broadcast(size, 0));
      at::Tensor host = at::empty({std::int64_t(bytes.size())}, at::kByte);
      std::memcpy(host.data_ptr<std::uint8_t>(), bytes.data(), bytes.size());
      std::vector<at::Tensor> data{host.to(device)};
      RETURN_IF_ERROR(group_->broadcast(data, 0));
      return *command;
    }
    std::vector<at::Tensor> size{at::zeros({1}, longs)};
    RETURN_IF_ERROR(group_->broadcast(size, 0));
    const std::int64_t n = size[0].item<std::int64_t>();
    if (n <= 0 || n > (std::int64_t(1) << 26))
      return make_error(ErrorCategory::kInvalidInput, "learner.bad_command",
                        "rank 0 announced a command of " + std::to_string(n) + " bytes");
    std::vector<at::Tensor> data{
        at::zeros({n}, at::TensorOptions().dtype(at::kByte).device(device))};
    RETURN_IF_ERROR(group_->broadcast(data, 0));
    const at::Tensor host = data[0].to(at::kCPU).contiguous();
    return decode_learner_command(
        std::string_view(reinterpret_cast<const char*>(host.data_ptr<std::uint8_t>()), size_t(n)));
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.torch",
                      std::string("broadcasting a learner command: ") + e.what());
  }
}

void LearnerLoop::execute(
    const LearnerCommand& c, Pending* p,
    const std::function<void(const TrainStep&, const Expected<StepDone>&)>& on_step) {
  if (c.kind == LearnerCommand::Kind::kTrain) {
    Expected<StepDone> r = service_.train(c.step);
    if (on_step) on_step(c.step, r);
    if (p != nullptr) p->finish(std::move(r), std::nullopt);
  } else if (c.kind == LearnerCommand::Kind::kCheckpoint) {
    Expected<CheckpointDone> r = service_.checkpoint(c.checkpoint);
    if (!r) log_error(r.error(), {{"checkpoint_step", std::to_string(c.checkpoint.step)}});
    if (p != nullptr) p->finish(std::nullopt, std::move(r));
  }
}

Status LearnerLoop::run(
    const std::atomic<bool>& stop,
    const std::function<void(const TrainStep&, const Expected<StepDone>&)>& on_step) {
  const bool several = group_ != nullptr && group_->world_size() > 1;
  auto close = [&] {
    std::deque<std::shared_ptr<Pending>> left;
    {
      std::lock_guard lk(mu_);
      closed_ = true;
      left.swap(queue_);
    }
    for (auto& p : left) p->finish(std::nullopt, std::nullopt);
  };
  auto broken = [&]() -> Status {
    if (group_ != nullptr && group_->broken())
      return make_error(ErrorCategory::kUnavailable, "learner.group_broken",
                        "a collective of the learner group failed: restart the learner group");
    return Status::ok();
  };

  if (several && group_->rank() != 0) {
    // Ranks > 0 follow rank 0 until it says stop; their own stop flag is not read here, since
    // leaving alone would make rank 0's next collective miss its deadline. A dead rank 0 shows
    // up as a failed or timed-out broadcast.
    (void)stop;
    close();
    while (true) {
      ASSIGN_OR_RETURN(LearnerCommand c, exchange(nullptr));
      if (c.kind == LearnerCommand::Kind::kStop) return Status::ok();
      execute(c, nullptr, on_step);
      RETURN_IF_ERROR(broken());
    }
  }

  // Rank 0 (or the only rank).
  const auto poll =
      std::min<std::chrono::milliseconds>(options_.idle_tick, std::chrono::milliseconds(100));
  auto last_sync = Clock::now();
  Status result = Status::ok();
  while (!stop.load()) {
    std::shared_ptr<Pending> p;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, poll, [&] { return !queue_.empty(); });
      if (!queue_.empty()) {
        p = queue_.front();
        queue_.pop_front();
      }
    }
    if (!p) {
      if (several && Clock::now() - last_sync >= options_.idle_tick) {
        LearnerCommand idle;
        if (Expected<LearnerCommand> r = exchange(&idle); !r) {
          result = r.error();
          break;
        }
        last_sync = Clock::now();
      }
      continue;
    }
    if (several) {
      if (Expected<LearnerCommand> r = exchange(&p->command); !r) {
        p->finish(p->command.kind == LearnerCommand::Kind::kTrain
                      ? std::optional<Expected<StepDone>>(r.error())
                      : std::nullopt,
                  p->command.kind == LearnerCommand::Kind::kCheckpoint
                      ? std::optional<Expected<CheckpointDone>>(r.error())
                      : std::nullopt);
        result = r.error();
        break;
      }
    }
    execute(p->command, p.get(), on_step);
    last_sync = Clock::now();
    if (Status b = broken(); !b) {
      result = b;
      break;
    }
  }
  close();
  if (several && result) {
    LearnerCommand bye{.kind = LearnerCommand::Kind::kStop};
    if (Expected<LearnerCommand> r = exchange(&bye); !r) return r.error();
  }
  return result;
}

}  // namespace cuda_agent
