// LearnerService and LearnerLoop on the CPU (fp32, a tiny random model), on a real run store that
// the test writes as the coordinator would (it keeps the writer open; the service follows it),
// with a real cpp-httplib server standing in for a policy engine (it records each weight load)
// and a second engine URL where nothing listens:
//  - a PPO step and agent warm-up steps (RFT + value; RFT skipped without a positive episode)
//    answer version + 1 with finite metrics; refused episodes are skipped by name; every version
//    is published atomically, posted to the engines (a dead one does not fail the step) and only
//    the newest two are kept; a repeated step is answered again without training;
//  - a checkpoint names its directory, size and checksum; a second service resumes from it with
//    bit-identical weights and publishes them;
//  - LearnerLoop runs requests from another thread and refuses them once stopped;
//  - with two Gloo ranks (each rank re-executes this binary), rank 0's requests run on both ranks
//    and both hold identical weights afterwards.
#include "learner/learner_service.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "learner/learner_group.h"
#include "messages/trajectory_codec.h"
#include "model/model_config.h"
#include "model/transformer.h"
#include "storage/run_store.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// This process's role in the two-rank test: -1 in the parent, else the rank it plays.
int my_rank() {
  const char* r = std::getenv("CA_LS_RANK");
  return r ? std::atoi(r) : -1;
}

std::string temp_root() {
  const char* dir = std::getenv("CA_LS_DIR");  // the parent's, in a rank process
  if (dir) return dir;
  return (fs::temp_directory_path() / ("ca_learner_service_" + std::to_string(::getpid())))
      .string();
}

int free_tcp_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

Episode make_episode(const std::string& id, double reward, std::uint32_t invalid_calls,
                     std::mt19937& rng) {
  Episode e;
  e.episode_id = EpisodeId{id};
  e.run_id = RunId{"run"};
  e.task_id = TaskId{"task-" + id};
  e.stage = EpisodeStage::kAgenticPpo;
  e.final_reward = reward;
  e.counters.invalid_tool_calls = invalid_calls;
  auto turn = [&](TurnRole role, int n, bool sampled) {
    Turn t;
    t.role = role;
    for (int k = 0; k < n; ++k) {
      t.token_ids.push_back(std::uint32_t(rng() % 250));
      t.loss_mask.push_back(sampled ? 1 : 0);
      if (sampled) t.logprobs.push_back(-0.5f - float(rng() % 100) / 40.f);
    }
    e.turns.push_back(std::move(t));
  };
  turn(TurnRole::kSystem, 5, false);
  turn(TurnRole::kUser, 8 + int(rng() % 5), false);
  turn(TurnRole::kAssistant, 12 + int(rng() % 20), true);
  turn(TurnRole::kTool, 6, false);
  turn(TurnRole::kAssistant, 8 + int(rng() % 9), true);
  e.counters.turns = 2;
  for (const Turn& t : e.turns) e.counters.tokens += t.token_ids.size();
  return e;
}

EpisodeRecord record_of(const Episode& e) {
  EpisodeRecord r;
  r.episode_id = e.episode_id;
  r.run_id = e.run_id;
  r.task_id = e.task_id;
  r.stage = e.stage;
  r.status = EpisodeStatus::kCompleted;
  r.final_reward = e.final_reward;
  r.invalid_tool_calls = e.counters.invalid_tool_calls;
  r.turns = 2;
  r.total_tokens = e.counters.tokens;
  r.trajectory_bytes = encode_episode(e);
  r.trajectory_size = r.trajectory_bytes.size();
  return r;
}

// Rewards of ep-0..ep-11: ep-0, ep-4, ep-8 negative; ep-5 positive but with an invalid tool call.
double reward_of(int i) { return i % 4 == 0 ? -1.0 : double(1 + i % 3); }

// A policy engine's weight endpoint that records what it was asked to load.
class FakeEngine {
 public:
  FakeEngine() {
    server_.Post("/v1/weights/load", [this](const httplib::Request& q, httplib::Response& s) {
      std::lock_guard lk(mu_);
      loads_.push_back(json::parse(q.body));
      s.set_content(R"({"version": 1})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeEngine() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<json> loads() {
    std::lock_guard lk(mu_);
    return loads_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<json> loads_;
};

std::vector<EpisodeId> ids(std::initializer_list<int> which) {
  std::vector<EpisodeId> out;
  for (int i : which) out.push_back(EpisodeId{"ep-" + std::to_string(i)});
  return out;
}

void expect_finite(const StepDone& d) {
  for (const auto& [name, value] : d.metrics) EXPECT_TRUE(std::isfinite(value)) << name;
}

// Every parameter of two models bit-identical.
void expect_same_weights(const Transformer& a, const Transformer& b) {
  auto pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
}

class LearnerServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = temp_root();
    model_ = root_ + "/model";
    store_dir_ = root_ + "/store";
    if (my_rank() >= 0) return;  // a rank process uses the parent's model and store
    fs::remove_all(root_);
    fs::create_directories(model_);
    const ModelConfig c = tiny_model_config("qwen2", /*vocab_size=*/256, /*head_dim=*/16);
    ASSERT_TRUE(Transformer::random(c, /*seed=*/3).save(model_));
    std::ofstream(model_ + "/tokenizer.json") << R"({"model": "a stand-in"})";
    StoreOptions so;
    so.dir = store_dir_;
    auto store = RunStore::open(so, StoreMode::kWrite);
    ASSERT_TRUE(store) << store.error().to_string();
    writer_ = store->release();
    StoreWrite w;
    std::mt19937 rng(5);
    for (int i = 0; i < 12; ++i)
      w.episodes.push_back(
          record_of(make_episode("ep-" + std::to_string(i), reward_of(i), i == 5 ? 1 : 0, rng)));
    // Malformed: an assistant turn without log-probs.
    Episode broken = make_episode("ep-broken", 1.0, 0, rng);
    broken.turns[2].logprobs.clear();
    w.episodes.push_back(record_of(broken));
    ASSERT_TRUE(writer_->write(std::move(w), std::chrono::seconds(30)));
  }
  static void TearDownTestSuite() {
    delete writer_;
    writer_ = nullptr;
    if (my_rank() < 0) fs::remove_all(root_);
  }

  LearnerServiceOptions options(const std::string& out) const {
    LearnerServiceOptions o;
    o.store_dir = store_dir_;
    o.run = RunId{"run"};
    o.model_dir = model_;
    o.out_dir = root_ + "/" + out;
    o.trainer.micro_batch_tokens = 256;
    o.trainer.actor_optimizer.lr = 1e-3;
    o.trainer.critic_optimizer.lr = 1e-3;
    o.trainer.keep_checkpoints = 2;
    o.engine_timeout = std::chrono::seconds(5);
    return o;
  }

  static inline std::string root_, model_, store_dir_;
  static inline RunStore* writer_ = nullptr;
};

TEST_F(LearnerServiceTest, StepsAnswerTheNextVersionAndPublishIt) {
  FakeEngine engine;
  LearnerServiceOptions o = options("steps");
  // Nothing listens on the second engine: its failure is logged, the steps still succeed.
  o.engine_urls = {engine.url(), "http://127.0.0.1:" + std::to_string(free_tcp_port())};
  auto service = LearnerService::create(o, nullptr);
  ASSERT_TRUE(service) << service.error().to_string();
  LearnerService& s = **service;
  EXPECT_FALSE(s.resumed());
  const auto initial = Transformer::load(model_);
  ASSERT_TRUE(initial);

  // PPO on six stored episodes, one malformed and one the store does not have.
  std::vector<EpisodeId> batch = ids({0, 1, 2, 3, 4, 5});
  batch.push_back(EpisodeId{"ep-broken"});
  batch.push_back(EpisodeId{"ep-missing"});
  const TrainStep ppo{.step = 0,
                      .stage = EpisodeStage::kAgenticPpo,
                      .version = PolicyVersion{0},
                      .episodes = batch};
  auto done = s.train(ppo);
  ASSERT_TRUE(done) << done.error().to_string();
  EXPECT_EQ(done->step, 0u);
  EXPECT_EQ(done->new_version.value(), 1u);
  EXPECT_EQ(s.policy_version(), 1u);
  expect_finite(*done);
  for (const char* key : {"loss/policy", "loss/value", "entropy", "explained_variance",
                          "reward/mean", "tokens/model", "seconds", "episodes/refused"})
    EXPECT_TRUE(done->metrics.count(key)) << key;
  EXPECT_EQ(done->metrics.at("episodes/trained"), 6);
  EXPECT_EQ(done->metrics.at("episodes/refused"), 2);
  double reward = 0;
  for (int i = 0; i < 6; ++i) reward += reward_of(i);
  EXPECT_DOUBLE_EQ(done->metrics.at("reward/mean"), reward / 6);
  EXPECT_GT(done->metrics.at("tokens/model"), 0);
  EXPECT_EQ(done->metrics.at("publish/engines_ok"), 1);
  EXPECT_EQ(done->metrics.at("publish/engines_failed"), 1);

  // Published: a complete model directory, posted to the live engine with its version.
  const std::string v1 = fs::absolute(o.out_dir + "/policy/v1").string();
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_TRUE(fs::exists(v1 + "/" + f)) << f;
  ASSERT_EQ(engine.loads().size(), 1u);
  EXPECT_EQ(engine.loads()[0]["path"], v1);
  EXPECT_EQ(engine.loads()[0]["version"], 1);
  auto published = Transformer::load(v1);
  ASSERT_TRUE(published) << published.error().to_string();
  expect_same_weights(*published, s.trainer().actor());
  bool changed = false;
  auto p0 = initial->parameters(), p1 = published->parameters();
  for (std::size_t i = 0; i < p0.size(); ++i) changed |= !at::equal(p0[i].second, p1[i].second);
  EXPECT_TRUE(changed) << "the PPO step left the actor unchanged";

  // The same step again (its answer was lost): the same answer, not trained twice.
  auto again = s.train(ppo);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->new_version.value(), 1u);
  EXPECT_EQ(again->metrics, done->metrics);
  EXPECT_EQ(s.policy_version(), 1u);
  EXPECT_EQ(engine.loads().size(), 1u);

  // Agent warm-up: RFT on ep-6, ep-7 (ep-5 has an invalid tool call, ep-8 a negative reward),
  // value pretraining on all four.
  auto warm = s.train({.step = 1,
                       .stage = EpisodeStage::kAgentWarmup,
                       .version = PolicyVersion{1},
                       .episodes = ids({5, 6, 7, 8})});
  ASSERT_TRUE(warm) << warm.error().to_string();
  EXPECT_EQ(warm->new_version.value(), 2u);
  expect_finite(*warm);
  EXPECT_EQ(warm->metrics.at("rft/sequences"), 2);
  EXPECT_EQ(warm->metrics.at("rft/skipped"), 0);
  EXPECT_TRUE(warm->metrics.count("loss/rft"));
  EXPECT_TRUE(warm->metrics.count("loss/value"));
  EXPECT_TRUE(warm->metrics.count("explained_variance"));

  // No positive episode: RFT skipped (said in the metrics), the version still goes up.
  auto value_only = s.train({.step = 2,
                             .stage = EpisodeStage::kAgentWarmup,
                             .version = PolicyVersion{2},
                             .episodes = ids({0, 4, 8})});
  ASSERT_TRUE(value_only) << value_only.error().to_string();
  EXPECT_EQ(value_only->new_version.value(), 3u);
  EXPECT_EQ(value_only->metrics.at("rft/skipped"), 1);
  EXPECT_FALSE(value_only->metrics.count("loss/rft"));
  EXPECT_EQ(value_only->metrics.at("reward/mean"), -1.0);

  // The newest two versions are kept.
  EXPECT_FALSE(fs::exists(o.out_dir + "/policy/v1"));
  EXPECT_TRUE(fs::exists(o.out_dir + "/policy/v2"));
  EXPECT_TRUE(fs::exists(o.out_dir + "/policy/v3"));
  ASSERT_EQ(engine.loads().size(), 3u);
  EXPECT_EQ(engine.loads()[2]["version"], 3);

  // A step whose episodes are all refused fails; so does a stage that does not train.
  auto none = s.train({.step = 3,
                       .stage = EpisodeStage::kAgenticPpo,
                       .version = PolicyVersion{3},
                       .episodes = {EpisodeId{"ep-broken"}, EpisodeId{"nope"}}});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, "learner.no_data");
  auto eval = s.train({.step = 3,
                       .stage = EpisodeStage::kEvaluation,
                       .version = PolicyVersion{3},
                       .episodes = ids({1})});
  ASSERT_FALSE(eval);
  EXPECT_EQ(eval.error().code, "learner.bad_stage");
  EXPECT_EQ(s.policy_version(), 3u);
}

TEST_F(LearnerServiceTest, ReadsEpisodesWrittenAfterItStarted) {
  auto service = LearnerService::create(options("follow"), nullptr);
  ASSERT_TRUE(service) << service.error().to_string();
  std::mt19937 rng(9);
  StoreWrite w;
  w.episodes.push_back(record_of(make_episode("ep-late", 2.0, 0, rng)));
  ASSERT_TRUE(writer_->write(std::move(w), std::chrono::seconds(30)));
  auto done = (*service)->train({.step = 0,
                                 .stage = EpisodeStage::kSingleTurnWarmup,
                                 .version = PolicyVersion{0},
                                 .episodes = {EpisodeId{"ep-late"}}});
  ASSERT_TRUE(done) << done.error().to_string();
  EXPECT_EQ(done->metrics.at("episodes/trained"), 1);
  EXPECT_EQ(done->metrics.at("reward/mean"), 2.0);
}

// [learner] kl_coef > 0: the service loads the initial policy again as the frozen reference, and
// each PPO step reports its KL to it (0 at the first step, while the actor still equals it).
TEST_F(LearnerServiceTest, KlPenaltyLoadsTheInitialPolicyAsTheReference) {
  LearnerServiceOptions o = options("kl");
  o.trainer.ppo.kl_coef = 0.1;
  auto service = LearnerService::create(o, nullptr);
  ASSERT_TRUE(service) << service.error().to_string();
  for (std::uint64_t k = 0; k < 2; ++k) {
    auto done = (*service)->train({.step = k,
                                   .stage = EpisodeStage::kAgenticPpo,
                                   .version = PolicyVersion{k},
                                   .episodes = ids({1, 2, 3, 9})});
    ASSERT_TRUE(done) << done.error().to_string();
    ASSERT_TRUE(done->metrics.count("kl/reference")) << "step " << k;
    if (k == 0) EXPECT_EQ(done->metrics.at("kl/reference"), 0.0);
    if (k == 1) EXPECT_GT(done->metrics.at("kl/reference"), 0.0);
  }
  auto plain = LearnerService::create(options("no-kl"), nullptr);
  ASSERT_TRUE(plain) << plain.error().to_string();
  auto done = (*plain)->train({.step = 0,
                               .stage = EpisodeStage::kAgenticPpo,
                               .version = PolicyVersion{0},
                               .episodes = ids({1, 2, 3, 9})});
  ASSERT_TRUE(done) << done.error().to_string();
  EXPECT_FALSE(done->metrics.count("kl/reference"));
}

// [learner] value_epochs: several passes of value pretraining over an agent warm-up batch; the
// critic explains more of the batch's returns before the last pass than before the first.
TEST_F(LearnerServiceTest, ValueEpochsPretrainTheCriticOnTheBatch) {
  LearnerServiceOptions o = options("value-epochs");
  o.value_epochs = 6;
  auto service = LearnerService::create(o, nullptr);
  ASSERT_TRUE(service) << service.error().to_string();
  auto done = (*service)->train({.step = 0,
                                 .stage = EpisodeStage::kAgentWarmup,
                                 .version = PolicyVersion{0},
                                 .episodes = ids({1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(done) << done.error().to_string();
  ASSERT_TRUE(done->metrics.count("explained_variance/last"));
  std::printf("explained variance %.3f before the first pass, %.3f before the last\n",
              done->metrics.at("explained_variance"), done->metrics.at("explained_variance/last"));
  EXPECT_GT(done->metrics.at("explained_variance/last"),
            done->metrics.at("explained_variance") + 0.1);
}

TEST_F(LearnerServiceTest, CheckpointResumesIdenticalWeights) {
  FakeEngine engine;
  LearnerServiceOptions o = options("resume");
  o.engine_urls = {engine.url()};
  auto first = LearnerService::create(o, nullptr);
  ASSERT_TRUE(first) << first.error().to_string();
  for (std::uint64_t k = 0; k < 2; ++k) {
    auto done = (*first)->train({.step = k,
                                 .stage = EpisodeStage::kAgenticPpo,
                                 .version = PolicyVersion{k},
                                 .episodes = ids({1, 2, 3, 9})});
    ASSERT_TRUE(done) << done.error().to_string();
  }
  auto wrong = (*first)->checkpoint({.step = 2, .version = PolicyVersion{7}});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "learner.version_mismatch");
  auto ck = (*first)->checkpoint({.step = 2, .version = PolicyVersion{2}});
  ASSERT_TRUE(ck) << ck.error().to_string();
  EXPECT_EQ(ck->step, 2u);
  EXPECT_TRUE(fs::exists(ck->path + "/CHECKSUMS")) << ck->path;
  EXPECT_TRUE(fs::exists(ck->path + "/model.safetensors"));
  EXPECT_GT(ck->size_bytes, fs::file_size(ck->path + "/model.safetensors"));
  EXPECT_EQ(ck->checksum.size(), 64u);
  EXPECT_EQ(ck->checksum.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(engine.loads().size(), 2u);

  auto second = LearnerService::create(o, nullptr);
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_TRUE((*second)->resumed());
  EXPECT_EQ((*second)->policy_version(), 2u);
  expect_same_weights((*first)->trainer().actor(), (*second)->trainer().actor());
  ASSERT_NE((*second)->trainer().critic(), nullptr);
  expect_same_weights((*first)->trainer().critic()->backbone,
                      (*second)->trainer().critic()->backbone);
  EXPECT_TRUE(at::equal((*first)->trainer().critic()->head.weight,
                        (*second)->trainer().critic()->head.weight));
  // The resumed weights went to the engine again (it answers 200 here; a real one that already
  // holds version 2 answers 409, which is logged).
  ASSERT_EQ(engine.loads().size(), 3u);
  EXPECT_EQ(engine.loads()[2]["version"], 2);

  // Both continue identically: the next step gives the same weights.
  const TrainStep next{.step = 2,
                       .stage = EpisodeStage::kAgenticPpo,
                       .version = PolicyVersion{2},
                       .episodes = ids({3, 6, 7})};
  ASSERT_TRUE((*first)->train(next));
  ASSERT_TRUE((*second)->train(next));
  expect_same_weights((*first)->trainer().actor(), (*second)->trainer().actor());
}

// The lineage after a learner restart: a learner restarted from its checkpoint at step 2 gets
// step 4 with the replay of steps 2 and 3 and ends with the same weights as the learner that
// never stopped; a learner one step ahead of a restarted coordinator (which formed another batch
// for that step) goes back to the checkpoint and replays; a replay that cannot reach the weights
// held trains them anyway and says so ("version/mismatch").
TEST_F(LearnerServiceTest, ARestartedLearnerReplaysTheStepsSinceItsCheckpoint) {
  LearnerServiceOptions o = options("replay");
  o.publish_on_resume = false;
  auto step = [](std::uint64_t k, std::vector<EpisodeId> episodes) {
    return TrainStep{.step = k,
                     .stage = EpisodeStage::kAgenticPpo,
                     .version = PolicyVersion{k},
                     .episodes = std::move(episodes)};
  };
  const std::vector<std::vector<EpisodeId>> batches = {ids({1, 2}), ids({3, 6}), ids({7, 9}),
                                                       ids({2, 10}), ids({1, 11})};
  auto recorded = [&](std::uint64_t from, std::uint64_t to) {
    std::vector<RecordedStep> r;
    for (std::uint64_t k = from; k < to; ++k)
      r.push_back({k, EpisodeStage::kAgenticPpo, PolicyVersion{k}, batches[k]});
    return r;
  };
  auto steady = LearnerService::create(o, nullptr);
  ASSERT_TRUE(steady) << steady.error().to_string();
  for (std::uint64_t k = 0; k < 4; ++k) {
    ASSERT_TRUE((*steady)->train(step(k, batches[k])));
    if (k == 1) ASSERT_TRUE((*steady)->checkpoint({.step = 2, .version = PolicyVersion{2}}));
  }

  // Restarted from the checkpoint of step 2: steps 2 and 3 replayed, then step 4.
  auto restarted = LearnerService::create(o, nullptr);
  ASSERT_TRUE(restarted) << restarted.error().to_string();
  EXPECT_EQ((*restarted)->policy_version(), 2u);
  TrainStep fourth = step(4, batches[4]);
  fourth.replay = recorded(2, 4);
  auto a = (*steady)->train(fourth);
  auto b = (*restarted)->train(fourth);
  ASSERT_TRUE(a) << a.error().to_string();
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_EQ(b->new_version.value(), 5u);
  EXPECT_EQ(b->metrics.at("version/mismatch"), 0);
  expect_same_weights((*steady)->trainer().actor(), (*restarted)->trainer().actor());

  // The coordinator restarted before recording step 4 and formed another batch for it: both go
  // back to step 2's checkpoint, replay 2 and 3, and train the new step 4 alike.
  TrainStep other = step(4, ids({5, 6}));
  other.replay = recorded(2, 4);
  ASSERT_TRUE((*steady)->train(other));
  auto fresh = LearnerService::create(o, nullptr);
  ASSERT_TRUE(fresh) << fresh.error().to_string();
  ASSERT_TRUE((*fresh)->train(other));
  expect_same_weights((*steady)->trainer().actor(), (*fresh)->trainer().actor());

  // A replay that starts after the checkpoint: nothing to rejoin from; the held weights train.
  auto lost = LearnerService::create(o, nullptr);
  ASSERT_TRUE(lost) << lost.error().to_string();
  TrainStep late = step(5, ids({1}));
  late.replay = recorded(3, 5);
  auto c = (*lost)->train(late);
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->metrics.at("version/mismatch"), 1);
}

TEST_F(LearnerServiceTest, LoopRunsRequestsFromAnotherThreadUntilStopped) {
  auto service = LearnerService::create(options("loop"), nullptr);
  ASSERT_TRUE(service) << service.error().to_string();
  LearnerLoop loop(**service, nullptr, {.idle_tick = std::chrono::milliseconds(50)});
  std::atomic<bool> stop{false};
  std::vector<std::uint64_t> seen;
  Status ran = Status::ok();
  std::thread owner([&] {
    ran = loop.run(stop, [&](const TrainStep& s, const Expected<StepDone>& d) {
      if (d) seen.push_back(s.step);
    });
  });
  auto done = loop.train({.step = 0,
                          .stage = EpisodeStage::kAgenticPpo,
                          .version = PolicyVersion{0},
                          .episodes = ids({1, 2})});
  ASSERT_TRUE(done) << done.error().to_string();
  EXPECT_EQ(done->new_version.value(), 1u);
  auto ck = loop.checkpoint({.step = 1, .version = PolicyVersion{1}});
  ASSERT_TRUE(ck) << ck.error().to_string();
  stop = true;
  owner.join();
  EXPECT_TRUE(ran) << ran.error().to_string();
  EXPECT_EQ(seen, std::vector<std::uint64_t>{0});
  auto late = loop.train({.step = 1,
                          .stage = EpisodeStage::kAgenticPpo,
                          .version = PolicyVersion{1},
                          .episodes = ids({1})});
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, "learner.stopping");
}

TEST(LearnerCommand, RoundTripsAndRefusesGarbage) {
  LearnerCommand c{.kind = LearnerCommand::Kind::kTrain,
                   .step = {.step = 7,
                            .stage = EpisodeStage::kAgentWarmup,
                            .version = PolicyVersion{6},
                            .episodes = ids({1, 2}),
                            .replay = {{.step = 6,
                                        .stage = EpisodeStage::kAgentWarmup,
                                        .version = PolicyVersion{5},
                                        .episodes = ids({0})}}}};
  auto back = decode_learner_command(encode_learner_command(c));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->kind, LearnerCommand::Kind::kTrain);
  EXPECT_EQ(back->step.step, 7u);
  EXPECT_EQ(back->step.stage, EpisodeStage::kAgentWarmup);
  EXPECT_EQ(back->step.version.value(), 6u);
  EXPECT_EQ(back->step.episodes, ids({1, 2}));
  EXPECT_EQ(back->step.replay, c.step.replay);
  LearnerCommand k{.kind = LearnerCommand::Kind::kCheckpoint,
                   .checkpoint = {.step = 3, .version = PolicyVersion{4}}};
  auto kb = decode_learner_command(encode_learner_command(k));
  ASSERT_TRUE(kb);
  EXPECT_EQ(kb->checkpoint.step, 3u);
  EXPECT_EQ(kb->checkpoint.version.value(), 4u);
  for (const char* bad :
       {"", "[]", "{\"kind\": 9}", "{\"kind\": 1}", "{\"kind\": \"x\"}", "\x01"}) {
    auto r = decode_learner_command(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, "learner.bad_command");
  }
}

// --- two ranks --------------------------------------------------------------------------------

// One rank's part: rank 0 trains two steps and a checkpoint through the loop; rank 1 follows.
// Both write their actor's weights to <out>/rank-<r>.safetensors for the parent to compare.
void play_rank(const LearnerServiceOptions& o, int rank, const std::string& rendezvous) {
  auto group = LearnerGroup::create({.rank = rank,
                                     .world_size = 2,
                                     .rendezvous = rendezvous,
                                     .timeout = std::chrono::seconds(60)});
  ASSERT_TRUE(group) << group.error().to_string();
  auto service = LearnerService::create(o, group->get());
  ASSERT_TRUE(service) << service.error().to_string();
  // An idle tick far below the group's deadline: rank 1 waits in broadcasts while rank 0 idles.
  LearnerLoop loop(**service, group->get(), {.idle_tick = std::chrono::milliseconds(100)});
  std::atomic<bool> stop{false};
  int steps_seen = 0;
  auto on_step = [&](const TrainStep&, const Expected<StepDone>& d) {
    EXPECT_TRUE(d) << d.error().to_string();
    ++steps_seen;
  };
  if (rank == 0) {
    std::thread rpc([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // some idle ticks first
      for (std::uint64_t k = 0; k < 2; ++k) {
        auto d =
            loop.train({.step = k,
                        .stage = k == 0 ? EpisodeStage::kAgenticPpo : EpisodeStage::kAgentWarmup,
                        .version = PolicyVersion{k},
                        .episodes = ids({1, 2, 3, 6, 7})});
        EXPECT_TRUE(d) << d.error().to_string();
      }
      auto ck = loop.checkpoint({.step = 2, .version = PolicyVersion{2}});
      EXPECT_TRUE(ck) << ck.error().to_string();
      stop = true;
    });
    Status ran = loop.run(stop, on_step);
    rpc.join();
    EXPECT_TRUE(ran) << ran.error().to_string();
  } else {
    Status ran = loop.run(stop, on_step);
    EXPECT_TRUE(ran) << ran.error().to_string();
  }
  EXPECT_EQ(steps_seen, 2);
  EXPECT_EQ((*service)->policy_version(), 2u);
  const std::string dir = o.out_dir + "/rank-" + std::to_string(rank);
  ASSERT_TRUE((*service)->trainer().actor().save(dir));
}

TEST_F(LearnerServiceTest, TwoRanksFollowRankZero) {
  LearnerServiceOptions o = options("ranks");
  if (my_rank() >= 0) {
    play_rank(o, my_rank(), std::getenv("CA_LS_RENDEZVOUS"));
    return;
  }
  if (!LearnerGroup::gloo_compiled_in()) GTEST_SKIP() << "no Gloo in this libtorch";
  fs::create_directories(o.out_dir);
  const std::string rendezvous = "file:" + o.out_dir + "/rendezvous";
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setenv("CA_LS_RANK", std::to_string(r).c_str(), 1);
      ::setenv("CA_LS_DIR", root_.c_str(), 1);
      ::setenv("CA_LS_RENDEZVOUS", rendezvous.c_str(), 1);
      const std::string log = o.out_dir + "/rank-" + std::to_string(r) + ".log";
      if (FILE* f = std::fopen(log.c_str(), "w")) {
        ::dup2(fileno(f), 1);
        ::dup2(fileno(f), 2);
      }
      ::execl("/proc/self/exe", "learner_service_test",
              "--gtest_filter=LearnerServiceTest.TwoRanksFollowRankZero", nullptr);
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  for (std::size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    while (::waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        for (pid_t p : pids) ::kill(p, SIGKILL);
        ::waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream log(o.out_dir + "/rank-" + std::to_string(r) + ".log");
    const std::string text((std::istreambuf_iterator<char>(log)), {});
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << ":\n" << text;
  }
  auto a = Transformer::load(o.out_dir + "/rank-0"), b = Transformer::load(o.out_dir + "/rank-1");
  ASSERT_TRUE(a && b);
  expect_same_weights(*a, *b);
  // Only rank 0 published and sealed a checkpoint.
  EXPECT_TRUE(fs::exists(o.out_dir + "/policy/v2"));
  EXPECT_FALSE(fs::is_empty(o.out_dir + "/checkpoints"));
}

}  // namespace
}  // namespace cuda_agent
