// The recorded episode (rollout/episode_test_transcript.h) end to end on this machine's GPU: the
// replay backend, the embedded compile farm (nvcc, for the GPU's own arch) and the real bench
// (rollout/local_bench.h: a BenchService running the sandboxed harness). The compile error comes
// back with file:line, the fixed kernel verifies on the GPU, and the final evaluation (fresh seeds,
// baselines re-measured) gives a reward of at least +1; the trajectory keeps its sampled tokens and
// masks through the wire codec. Skipped, with a message, where there is no GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "compile_farm/farm.h"
#include "core/log.h"
#include "gpu_bench/device_probe.h"
#include "messages/trajectory_codec.h"
#include "rollout/episode.h"
#include "rollout/episode_test_transcript.h"
#include "rollout/farm_tools.h"
#include "rollout/local_bench.h"
#include "rollout/replay_policy.h"

namespace cuda_agent {
namespace {

using namespace episode_test;  // NOLINT(google-build-using-namespace): the shared transcript

TEST(EpisodeGpu, ReplayedEpisodeWithRealCompileAndBenchEarnsAReward) {
  (void)setup_logging({.level = "warn"});
  const DeviceList devices = list_devices();
  if (devices.devices.empty()) GTEST_SKIP() << "no GPU: " << devices.no_gpu_reason;
  if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc"))
    GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  auto farm = EmbeddedCompileFarm::start({}, 1);
  ASSERT_TRUE(farm) << farm.error().to_string();
  auto client = CompileClient::connect({.broker_endpoint = (*farm)->client_endpoint()});
  ASSERT_TRUE(client) << client.error().to_string();
  BenchServiceOptions o;
  o.device = devices.devices[0].index;
  o.bench.timed_trials = 30;
  o.bench.warmup_trials = 3;
  auto bench = BenchService::create(o);
  ASSERT_TRUE(bench) << bench.error().to_string();
  const std::string arch =
      "sm_" + std::to_string(devices.devices[0].cc_major * 10 + devices.devices[0].cc_minor);
  FarmEvaluationTools tools(
      **client, {.target_arch = arch},
      local_bench_evaluator(std::shared_ptr<BenchService>(std::move(*bench)), "t/relu"));
  auto policy = ReplayPolicy::parse(transcript(), "transcript");
  ASSERT_TRUE(policy) << policy.error().to_string();
  Episode e = run_episode({.episode_id = EpisodeId{"gpu-e1"},
                           .run_id = RunId{"test"},
                           .task_id = TaskId{"t/relu"},
                           .model_py = kModelPy,
                           .policy = policy->get(),
                           .tools = &tools});

  EXPECT_EQ(e.status, EpisodeStatus::kCompleted);
  EXPECT_GE(e.final_reward, 1) << e.turns.back().tool_results[0].content;
  ASSERT_EQ(e.turns.size(), 2u + 14u + 1u);
  // The compile error, with its file and line, then the fixed build.
  EXPECT_TRUE(e.turns[5].tool_results[0].is_error);
  EXPECT_NE(e.turns[5].tool_results[0].content.find("kernels/scale_relu.cu(4)"), std::string::npos)
      << e.turns[5].tool_results[0].content;
  EXPECT_FALSE(e.turns[7].tool_results[1].is_error) << e.turns[7].tool_results[1].content;
  // verify on the GPU passed; the malformed call was answered; benchmark ran.
  EXPECT_FALSE(e.turns[9].tool_results[1].is_error) << e.turns[9].tool_results[1].content;
  EXPECT_TRUE(e.turns[11].tool_results[0].is_error);
  EXPECT_FALSE(e.turns[13].tool_results[0].is_error) << e.turns[13].tool_results[0].content;
  EXPECT_EQ(e.turns.back().tool_results[0].call_id, "final_evaluation");
  // The trajectory: the sampled tokens and their mask exactly, byte for byte through the codec.
  EXPECT_EQ(e.turns[2].token_ids, (std::vector<std::uint32_t>{11, 12, 13}));
  EXPECT_EQ(e.turns[2].loss_mask, (std::vector<std::uint8_t>{1, 1, 1}));
  auto decoded = decode_episode(encode_episode(e));
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  EXPECT_EQ(encode_episode(*decoded), encode_episode(e));
}

}  // namespace
}  // namespace cuda_agent
