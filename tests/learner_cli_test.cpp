// cuda-agent-learn as processes, on a real run store and a tiny model (CPU, fp32):
//  - 2 and 4 Gloo ranks train the same weights as one rank (and sharded optimizer state the same
//    as unsharded);
//  - SIGKILL at random instants of a 30-step run, each followed by a resume: the final weights are
//    bit-identical to an uninterrupted run's, and no torn checkpoint is ever loaded;
//  - a malformed episode is refused by name and the run goes on.
// Torch-free itself: it makes the model with cuda-agent-model and reads weights with model_io.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/content_hash.h"
#include "messages/trajectory_codec.h"
#include "model/safetensors.h"
#include "storage/run_store.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

struct Dir {
  std::string path;
  explicit Dir(const std::string& name)
      : path((fs::temp_directory_path() / ("ca_learn_" + name + "_" + std::to_string(::getpid())))
                 .string()) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string sub(const std::string& n) const { return path + "/" + n; }
};

// Starts argv as a child (dies with the test); returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    FILE* f = std::fopen(log.c_str(), "a");
    if (f) {
      ::dup2(fileno(f), 1);
      ::dup2(fileno(f), 2);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for `pid` with a deadline; returns its exit code (-1: killed by the deadline).
int wait_for(pid_t pid, std::chrono::seconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The newest step-* directory under `out`.
std::string latest_checkpoint(const std::string& out) {
  std::string best;
  if (!fs::exists(out)) return best;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) == 0 && name > fs::path(best).filename().string())
      best = e.path().string();
  }
  return best;
}

// Max |a - b| over every float32 tensor of two model.safetensors files.
double max_weight_diff(const std::string& a, const std::string& b) {
  auto fa = SafetensorsFile::open(a), fb = SafetensorsFile::open(b);
  EXPECT_TRUE(fa && fb);
  if (!fa || !fb) return INFINITY;
  double d = 0;
  for (const auto& [name, ta] : fa->tensors()) {
    const auto it = fb->tensors().find(name);
    EXPECT_NE(it, fb->tensors().end()) << name;
    if (it == fb->tensors().end()) return INFINITY;
    EXPECT_EQ(ta.dtype, StDtype::kF32);
    const float* x = reinterpret_cast<const float*>(ta.data);
    const float* y = reinterpret_cast<const float*>(it->second.data);
    for (std::int64_t i = 0; i < ta.numel(); ++i) d = std::max(d, double(std::fabs(x[i] - y[i])));
  }
  return d;
}

class LearnerCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new Dir("suite");
    model_ = dir_->sub("model");
    ASSERT_EQ(std::system((std::string(CUDA_AGENT_MODEL_EXE) + " init --tiny " + model_ +
                           " --seed 3 > /dev/null")
                              .c_str()),
              0);
    store_ = dir_->sub("store");
    auto store = RunStore::open(
        [&] {
          StoreOptions o;
          o.dir = store_;
          return o;
        }(),
        StoreMode::kWrite);
    ASSERT_TRUE(store) << store.error().to_string();
    StoreWrite w;
    std::mt19937 rng(5);
    for (int i = 0; i < 24; ++i) {
      Episode e;
      e.episode_id = EpisodeId{"ep-" + std::to_string(i)};
      e.run_id = RunId{"run"};
      e.task_id = TaskId{"task-" + std::to_string(i % 6)};
      e.stage = EpisodeStage::kAgenticPpo;
      e.final_reward = (i % 4 == 0) ? -1.0 : double(1 + i % 3);
      auto turn = [&](TurnRole role, int n, bool sampled) {
        Turn t;
        t.role = role;
        for (int k = 0; k < n; ++k) {
          t.token_ids.push_back(std::uint32_t(rng() % 200));
          t.loss_mask.push_back(sampled ? 1 : 0);
          if (sampled) t.logprobs.push_back(-0.5f - float(rng() % 100) / 40.f);
        }
        t.policy_version = PolicyVersion{0};
        e.turns.push_back(std::move(t));
      };
      turn(TurnRole::kSystem, 6, false);
      turn(TurnRole::kUser, 10 + i % 5, false);
      turn(TurnRole::kAssistant, 20 + (i * 7) % 30, true);
      turn(TurnRole::kTool, 8, false);
      turn(TurnRole::kAssistant, 12 + i % 9, true);
      e.counters.turns = 2;
      e.counters.tokens = 0;
      for (const Turn& t : e.turns) e.counters.tokens += t.token_ids.size();
      EpisodeRecord r;
      r.episode_id = e.episode_id;
      r.run_id = e.run_id;
      r.task_id = e.task_id;
      r.stage = e.stage;
      r.status = EpisodeStatus::kCompleted;
      r.final_reward = e.final_reward;
      r.turns = 2;
      r.total_tokens = e.counters.tokens;
      r.trajectory_bytes = encode_episode(e);
      r.trajectory_size = r.trajectory_bytes.size();
      w.episodes.push_back(std::move(r));
    }
    {  // malformed: an assistant turn without log-probs
      Episode e;
      e.episode_id = EpisodeId{"ep-broken"};
      e.run_id = RunId{"run"};
      e.task_id = TaskId{"task-0"};
      Turn t;
      t.role = TurnRole::kUser;
      t.token_ids = {1, 2, 3};
      t.loss_mask = {0, 0, 0};
      e.turns.push_back(t);
      t.role = TurnRole::kAssistant;
      t.loss_mask = {1, 1, 1};
      e.turns.push_back(t);
      EpisodeRecord r;
      r.episode_id = e.episode_id;
      r.run_id = e.run_id;
      r.task_id = e.task_id;
      r.final_reward = 1.0;
      r.trajectory_bytes = encode_episode(e);
      r.trajectory_size = r.trajectory_bytes.size();
      // The codec itself refuses a mask/log-prob mismatch only when sizes disagree; an assistant
      // turn with no log-probs at all is the learner's to refuse.
      w.episodes.push_back(std::move(r));
    }
    ASSERT_TRUE((*store)->write(std::move(w), std::chrono::seconds(30)));
  }
  static void TearDownTestSuite() { delete dir_; }

  std::vector<std::string> learn(const std::string& mode, const std::string& out, int steps,
                                 std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {CUDA_AGENT_LEARN_EXE,
                                  mode,
                                  "--store",
                                  store_,
                                  "--run",
                                  "run",
                                  "--model",
                                  model_,
                                  "--out",
                                  out,
                                  "--steps",
                                  std::to_string(steps),
                                  "--batch-episodes",
                                  "8",
                                  "--lr",
                                  "1e-3",
                                  "--checkpoint-every",
                                  "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  static inline Dir* dir_ = nullptr;
  static inline std::string model_, store_;
};

TEST_F(LearnerCli, RanksTrainTheSameWeightsAsOneRank) {
  Dir d("ranks");
  const int steps = 3;
  ASSERT_EQ(
      wait_for(spawn(learn("ppo", d.sub("w1"), steps), d.sub("w1.log")), std::chrono::seconds(120)),
      0)
      << slurp(d.sub("w1.log"));
  const std::string one = latest_checkpoint(d.sub("w1")) + "/model.safetensors";
  for (const auto& [world, shard] :
       std::vector<std::pair<int, bool>>{{2, false}, {4, false}, {2, true}}) {
    const std::string tag = "w" + std::to_string(world) + (shard ? "s" : "");
    std::vector<pid_t> pids;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> extra = {"--rank",       std::to_string(r),
                                        "--world-size", std::to_string(world),
                                        "--rendezvous", "file:" + d.sub(tag + ".rdv"),
                                        "--timeout-ms", "60000"};
      if (shard) extra.push_back("--shard-optimizer");
      pids.push_back(spawn(learn("ppo", d.sub(tag), steps, extra), d.sub(tag + ".log")));
    }
    for (pid_t p : pids)
      ASSERT_EQ(wait_for(p, std::chrono::seconds(180)), 0) << tag << "\n"
                                                           << slurp(d.sub(tag + ".log"));
    const double diff = max_weight_diff(one, latest_checkpoint(d.sub(tag)) + "/model.safetensors");
    std::printf("%s: max |weights - one rank's| = %.3g after %d ppo steps\n", tag.c_str(), diff,
                steps);
    EXPECT_LE(diff, 1e-6) << tag;
  }
}

TEST_F(LearnerCli, KilledAndResumedRunEndsBitIdentical) {
  Dir d("resume");
  const int steps = 30;
  const char* env_seed = std::getenv("CA_TEST_SEED");
  const std::uint64_t seed = env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261204;
  std::printf("seed %llu (set CA_TEST_SEED to repeat)\n", static_cast<unsigned long long>(seed));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(wait_for(spawn(learn("sft", d.sub("straight"), steps), d.sub("straight.log")),
                     std::chrono::seconds(240)),
            0)
      << slurp(d.sub("straight.log"));
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string straight = latest_checkpoint(d.sub("straight"));
  ASSERT_EQ(fs::path(straight).filename(), "step-00000030");
  EXPECT_NE(slurp(d.sub("straight.log")).find("refused: invalid_input/learner.bad_trajectory"),
            std::string::npos)
      << slurp(d.sub("straight.log"));

  std::mt19937_64 rng(seed);
  // Each attempt lives 0.2 to 2.5 s: some die before their first step (start-up takes about
  // a second), most mid-step or inside a checkpoint write (one per step), so the 20 kills are
  // spread over the run instead of landing after it finished.
  (void)run_s;
  std::uniform_real_distribution<double> when(0.2, 2.5);
  int kills = 0;
  for (; kills < 20; ++kills) {
    pid_t pid = spawn(learn("sft", d.sub("killed"), steps), d.sub("killed.log"));
    const double at = when(rng);
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::printf("kill %d at %.2f s: latest %s\n", kills + 1, at,
                fs::path(latest_checkpoint(d.sub("killed"))).filename().c_str());
  }
  ASSERT_EQ(wait_for(spawn(learn("sft", d.sub("killed"), steps), d.sub("killed.log")),
                     std::chrono::seconds(240)),
            0)
      << slurp(d.sub("killed.log"));
  const std::string resumed = latest_checkpoint(d.sub("killed"));
  ASSERT_EQ(fs::path(resumed).filename(), "step-00000030");
  const std::string a = slurp(straight + "/model.safetensors");
  const std::string b = slurp(resumed + "/model.safetensors");
  std::printf("%d kills; uninterrupted %s, resumed %s\n", kills, content_hash(a).c_str(),
              content_hash(b).c_str());
  EXPECT_EQ(content_hash(a), content_hash(b));
}

TEST_F(LearnerCli, EmptyRunIsAClearError) {
  Dir d("empty");
  auto args = learn("sft", d.sub("out"), 1);
  args[5] = "no-such-run";
  const int rc = wait_for(spawn(args, d.sub("log")), std::chrono::seconds(60));
  EXPECT_EQ(rc, 2) << slurp(d.sub("log"));
  EXPECT_NE(slurp(d.sub("log")).find("learner.no_data"), std::string::npos) << slurp(d.sub("log"));
}

}  // namespace
}  // namespace cuda_agent
