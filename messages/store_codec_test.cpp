#include "messages/store_codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace cuda_agent {
namespace {

EpisodeRecord sample_episode(std::size_t trajectory_size) {
  EpisodeRecord e;
  e.episode_id = EpisodeId{"e-1"};
  e.run_id = RunId{"run-a"};
  e.task_id = TaskId{"kb/l2/19"};
  e.stage = EpisodeStage::kAgentWarmup;
  e.policy_version = PolicyVersion{12};
  e.status = EpisodeStatus::kTruncated;
  e.final_reward = 2.5;
  e.turns = 17;
  e.invalid_tool_calls = 2;
  e.wasted_loops = 1;
  e.total_tokens = 40'000;
  e.created_unix_ms = 1'800'000'000'123;
  e.trajectory_bytes.resize(trajectory_size);
  std::mt19937 rng(7);
  for (char& c : e.trajectory_bytes) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
  return e;
}

TEST(StoreCodec, EpisodeRoundTripsWithAlignedAndUnalignedTrajectories) {
  for (std::size_t size : {0u, 1u, 13u, 64u, 65536u, 65541u}) {
    EpisodeRecord e = sample_episode(size);
    std::string v = encode_store_value(e);
    EpisodeRecord back;
    Status s = decode_store_value(v, &back);
    ASSERT_TRUE(s) << s.error().to_string();
    EXPECT_EQ(back.episode_id, e.episode_id);
    EXPECT_EQ(back.run_id, e.run_id);
    EXPECT_EQ(back.task_id, e.task_id);
    EXPECT_EQ(back.stage, EpisodeStage::kAgentWarmup);
    EXPECT_EQ(back.policy_version, PolicyVersion{12});
    EXPECT_EQ(back.status, EpisodeStatus::kTruncated);
    EXPECT_EQ(back.final_reward, 2.5);
    EXPECT_EQ(back.turns, 17u);
    EXPECT_EQ(back.invalid_tool_calls, 2u);
    EXPECT_EQ(back.wasted_loops, 1u);
    EXPECT_EQ(back.total_tokens, 40'000u);
    EXPECT_EQ(back.created_unix_ms, 1'800'000'000'123);
    EXPECT_EQ(back.trajectory_size, size);
    EXPECT_EQ(back.trajectory_bytes, e.trajectory_bytes);
  }
}

TEST(StoreCodec, SummaryEncodingIsDeterministic) {
  EpisodeSummary s = sample_episode(0);
  s.trajectory_size = 99;
  EXPECT_EQ(encode_store_value(s), encode_store_value(s));
  EpisodeSummary back;
  ASSERT_TRUE(decode_store_value(encode_store_value(s), &back));
  EXPECT_EQ(back.trajectory_size, 99u);
}

TEST(StoreCodec, OtherRecordsRoundTrip) {
  EvaluationRecord ev;
  ev.evaluation_id = EvaluationId{"ev-1"};
  ev.task_id = TaskId{"t"};
  ev.reward = 3;
  ev.verified = true;
  ev.speedup_vs_compile = 1.7;
  ev.audit = std::string("a\0b", 3);
  EvaluationRecord ev2;
  ASSERT_TRUE(decode_store_value(encode_store_value(ev), &ev2));
  EXPECT_EQ(ev2.audit, ev.audit);
  EXPECT_TRUE(ev2.verified);
  EXPECT_EQ(ev2.speedup_vs_compile, 1.7);

  MetricRecord m;
  m.run_id = RunId{"r"};
  m.name = "reward/mean";
  m.step = 5;
  m.value = -0.25;
  m.unix_ms = 42;
  MetricRecord m2;
  ASSERT_TRUE(decode_store_value(encode_store_value(m), &m2));
  EXPECT_EQ(m2.name, "reward/mean");
  EXPECT_EQ(m2.value, -0.25);
  EXPECT_EQ(m2.unix_ms, 42);

  StoreHeader h;
  h.magic = std::string(kStoreMagic);
  h.format_version = kStoreFormatVersion;
  StoreHeader h2;
  ASSERT_TRUE(decode_store_value(encode_store_value(h), &h2));
  EXPECT_EQ(h2.magic, kStoreMagic);
}

TEST(StoreCodec, EpisodeAttemptRoundTripsEveryField) {
  EpisodeAttemptRecord a;
  a.run_id = RunId{"r"};
  a.episode_id = EpisodeId{"e7"};
  a.attempt = 3;
  a.task_id = TaskId{"t/1"};
  a.worker_id = WorkerId{"host:12:99"};
  a.state = AttemptState::kAborted;
  a.started_unix_ms = 11;
  a.updated_unix_ms = 22;
  a.note = "worker host:12:99 lost";
  const std::string v = encode_store_value(a);
  auto prefix = read_store_value_prefix(v);
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->kind, StoreRecordKind::kEpisodeAttempt);
  EpisodeAttemptRecord b;
  ASSERT_TRUE(decode_store_value(v, &b));
  EXPECT_EQ(b.run_id, a.run_id);
  EXPECT_EQ(b.episode_id, a.episode_id);
  EXPECT_EQ(b.attempt, 3u);
  EXPECT_EQ(b.task_id, a.task_id);
  EXPECT_EQ(b.worker_id, a.worker_id);
  EXPECT_EQ(b.state, AttemptState::kAborted);
  EXPECT_EQ(b.started_unix_ms, 11);
  EXPECT_EQ(b.updated_unix_ms, 22);
  EXPECT_EQ(b.note, a.note);
  EXPECT_EQ(to_string(b.state), "aborted");
  // Another kind's value is refused, naming both kinds.
  MetricRecord m;
  Status s = decode_store_value(v, &m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("holds a record of kind EpisodeAttempt"), std::string::npos);
}

TEST(StoreCodec, PrefixCarriesMagicVersionKindAndSize) {
  std::string v = encode_store_value(sample_episode(64));
  EXPECT_EQ(v.substr(0, 4), "CARS");
  auto p = read_store_value_prefix(v);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->format_version, kStoreFormatVersion);
  EXPECT_EQ(p->kind, StoreRecordKind::kEpisode);
  EXPECT_GT(p->unpacked_words, 8u);
}

TEST(StoreCodec, RejectsAnotherKindGarbageTruncationAndVersions) {
  std::string v = encode_store_value(sample_episode(256));
  EpisodeSummary summary;
  Status s = decode_store_value(v, &summary);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "store.corrupt_value");
  EXPECT_NE(s.error().message.find("holds a record of kind Episode"), std::string::npos);

  EpisodeRecord e;
  EXPECT_EQ(decode_store_value("garbage", &e).error().code, "store.corrupt_value");
  EXPECT_EQ(decode_store_value(std::string(100, 'x'), &e).error().code, "store.corrupt_value");
  EXPECT_EQ(decode_store_value(v.substr(0, v.size() - 9), &e).error().code, "store.corrupt_value");
  EXPECT_EQ(decode_store_value(v + "tail", &e).error().code, "store.corrupt_value");

  std::string newer = v;
  newer[5] = static_cast<char>(kStoreFormatVersion + 1);
  Status sn = decode_store_value(newer, &e);
  EXPECT_EQ(sn.error().code, "store.newer_version");
  EXPECT_NE(sn.error().message.find("newer version"), std::string::npos);
  std::string zero = v;
  zero[5] = 0;
  EXPECT_EQ(decode_store_value(zero, &e).error().code, "store.unsupported_version");

  // A prefix that claims a huge unpacked size is refused before anything is allocated.
  std::string huge = v;
  huge[8] = static_cast<char>(0x7f);
  EXPECT_EQ(decode_store_value(huge, &e).error().code, "store.corrupt_value");
}

TEST(StoreCodec, RandomMutationsNeverCrash) {
  const char* env = std::getenv("CUDA_AGENT_TEST_SEED");
  const unsigned seed = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 20261202u;
  std::printf("seed %u (CUDA_AGENT_TEST_SEED replays)\n", seed);
  std::mt19937 rng(seed);
  const std::string good = encode_store_value(sample_episode(300));
  for (int i = 0; i < 2000; ++i) {
    std::string v = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) v[rng() % v.size()] = static_cast<char>(rng());
    EpisodeRecord e;
    Status s = decode_store_value(v, &e);  // any outcome but a crash or an exception
    if (!s) {
      EXPECT_FALSE(s.error().code.empty());
    }
  }
}

}  // namespace
}  // namespace cuda_agent
