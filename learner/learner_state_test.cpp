// The learner's state: MasterAdamW (against torch::optim::AdamW, bf16 params over fp32 master
// weights, sharded == unsharded, clipping, warm-up, state round trip) and checkpoints (round
// trip, corruption and torn writes fall back to the previous checkpoint, stale staging
// directories, pruning, several ranks staging into one checkpoint).
#include <gtest/gtest.h>
#include <sodium.h>

#include <filesystem>
#include <fstream>

#include "learner/checkpoint.h"
#include "learner/optimizer.h"
#include "model/model_test_util.h"
#include "model/transformer.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Params = std::vector<std::pair<std::string, at::Tensor>>;

// fp32 (or `dtype`) leaf params of awkward sizes (1 + 35 + 13 + 60 = 109 elements, not a
// multiple of any vector width).
Params make_params(std::uint64_t seed, at::ScalarType dtype = at::kFloat) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  Params p;
  for (auto [name, shape] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
           {"a", {1}}, {"b", {7, 5}}, {"c", {13}}, {"d", {3, 4, 5}}}) {
    p.emplace_back(name, at::randn(shape, gen).to(dtype).requires_grad_(true));
  }
  return p;
}

Params clone_params(const Params& src) {
  Params p;
  for (const auto& [n, t] : src) p.emplace_back(n, t.detach().clone().requires_grad_(true));
  return p;
}

// Step `step`'s gradient of every param (the same on every copy).
std::vector<at::Tensor> grads_for(const Params& p, int step) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + step);
  std::vector<at::Tensor> g;
  for (const auto& [n, t] : p) g.push_back(at::randn(t.sizes(), gen));
  return g;
}

void set_grads(const Params& p, const std::vector<at::Tensor>& g) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i].second.mutable_grad() = g[i].to(p[i].second.scalar_type());
  }
}

double max_diff(const Params& a, const Params& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, (a[i].second.detach().to(at::kDouble) - b[i].second.detach().to(at::kDouble))
                        .abs()
                        .max()
                        .item<double>());
  }
  return m;
}

bool all_equal(const Params& a, const Params& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i].second.detach(), b[i].second.detach())) return false;
  }
  return true;
}

class AdamWMatchesTorch : public ::testing::TestWithParam<double> {};

TEST_P(AdamWMatchesTorch, TwentyStepsWithin1e6) {
  const double wd = GetParam();
  Params mine = make_params(1), ref = clone_params(mine);
  MasterAdamW opt =
      MasterAdamW::create(mine, {.lr = 1e-2, .weight_decay = wd, .max_grad_norm = 0}, {});
  std::vector<at::Tensor> ref_tensors;
  for (auto& [n, t] : ref) ref_tensors.push_back(t);
  torch::optim::AdamW torch_opt(
      ref_tensors, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.999}).eps(1e-8).weight_decay(wd));
  for (int s = 0; s < 20; ++s) {
    auto g = grads_for(mine, s);
    set_grads(mine, g);
    set_grads(ref, g);
    OptimizerStepStats st = opt.step(opt.flat_grad());
    torch_opt.step();
    EXPECT_FALSE(st.clipped);
    EXPECT_DOUBLE_EQ(st.lr, 1e-2);
  }
  EXPECT_EQ(opt.steps(), 20);
  EXPECT_LT(max_diff(mine, ref), 1e-6);
  EXPECT_GT(max_diff(mine, make_params(1)), 1e-2);  // it did move
}

INSTANTIATE_TEST_SUITE_P(WeightDecay, AdamWMatchesTorch, ::testing::Values(0.0, 0.1));

TEST(MasterAdamW, Bf16ParamsAccumulateBelowTheirResolution) {
  // A bf16 1.0 moves by ~1e-4 per step: each step alone rounds back to 1.0 in bf16 (spacing
  // 2^-7 there), the fp32 master keeps them.
  auto w = at::ones({64}, at::kBFloat16).requires_grad_(true);
  MasterAdamW opt = MasterAdamW::create({{"w", w}}, {.lr = 1e-4, .max_grad_norm = 0}, {});
  for (int s = 0; s < 100; ++s) {
    w.mutable_grad() = at::ones({64}, at::kBFloat16);
    opt.step(opt.flat_grad());
    if (s == 0) {
      EXPECT_TRUE(at::equal(w.detach(), at::ones({64}, at::kBFloat16)));  // too small alone
    }
  }
  at::Tensor master = opt.full_master().narrow(0, 0, 64);
  EXPECT_NEAR(master[0].item<double>(), 1.0 - 100 * 1e-4, 1e-5);
  EXPECT_TRUE(at::equal(w.detach(), master.to(at::kBFloat16)));
  EXPECT_LT(w[0].item<double>(), 1.0);
  EXPECT_EQ(w.scalar_type(), at::kBFloat16);
}

class ShardedEqualsUnsharded : public ::testing::TestWithParam<int> {};

TEST_P(ShardedEqualsUnsharded, BitIdentical) {
  const int world = GetParam();
  const AdamWOptions o{.lr = 1e-2, .weight_decay = 0.05, .max_grad_norm = 2.0, .warmup_steps = 3};
  Params single = make_params(2);
  MasterAdamW ref = MasterAdamW::create(single, o, {});
  std::vector<Params> ranks;
  std::vector<MasterAdamW> opts;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(clone_params(single));
    opts.push_back(
        MasterAdamW::create(ranks.back(), o, {.rank = r, .world_size = world, .sharded = true}));
  }
  EXPECT_EQ(opts[0].padded_numel() % (64 * world), 0);
  EXPECT_EQ(opts[0].shard_numel() * world, opts[0].padded_numel());
  for (int s = 0; s < 20; ++s) {
    auto g = grads_for(single, s);
    set_grads(single, g);
    const OptimizerStepStats want = ref.step(ref.flat_grad());
    for (int r = 0; r < world; ++r) {
      set_grads(ranks[r], g);
      const OptimizerStepStats got = opts[r].step(opts[r].flat_grad());
      EXPECT_EQ(got.grad_norm, want.grad_norm);
      EXPECT_EQ(got.clipped, want.clipped);
    }
    // All-gather: every rank's owned slice into every rank's full buffer.
    for (int r = 0; r < world; ++r) {
      for (int q = 0; q < world; ++q) {
        opts[r]
            .full_master()
            .narrow(0, q * opts[q].shard_numel(), opts[q].shard_numel())
            .copy_(opts[q].owned_master());
      }
    }
    for (auto& opt : opts) opt.publish();
  }
  for (int r = 0; r < world; ++r) {
    EXPECT_LT(max_diff(ranks[r], single), 1e-6) << "rank " << r;
    EXPECT_TRUE(all_equal(ranks[r], single))
        << "rank " << r << " differs by " << max_diff(ranks[r], single);
  }
}

INSTANTIATE_TEST_SUITE_P(World, ShardedEqualsUnsharded, ::testing::Values(2, 3));

TEST(MasterAdamW, ClipsToTheGlobalNorm) {
  Params a = make_params(3), b = clone_params(a);
  MasterAdamW clipped = MasterAdamW::create(a, {.lr = 1e-2, .max_grad_norm = 1.0}, {});
  MasterAdamW plain = MasterAdamW::create(b, {.lr = 1e-2, .max_grad_norm = 0}, {});
  at::Tensor g = at::randn({clipped.numel()}, at::make_generator<at::CPUGeneratorImpl>(7));
  g = g * (10.0 / g.norm().item<double>());  // norm 10
  OptimizerStepStats s = clipped.step(g);
  EXPECT_TRUE(s.clipped);
  EXPECT_NEAR(s.grad_norm, 10.0, 1e-5);
  OptimizerStepStats p = plain.step(g * (1.0 / (s.grad_norm + 1e-6)));
  EXPECT_FALSE(p.clipped);
  EXPECT_TRUE(all_equal(a, b)) << max_diff(a, b);
  // Below the limit: untouched.
  OptimizerStepStats small = clipped.step(g * 0.01);
  EXPECT_FALSE(small.clipped);
  EXPECT_NEAR(small.grad_norm, 0.1, 1e-6);
}

TEST(MasterAdamW, WarmsUpLinearlyAndScales) {
  Params a = make_params(4);
  MasterAdamW opt = MasterAdamW::create(a, {.lr = 0.4, .max_grad_norm = 0, .warmup_steps = 4}, {});
  const at::Tensor g = at::ones({opt.numel()});
  std::vector<double> lrs;
  for (int s = 0; s < 6; ++s) lrs.push_back(opt.step(g).lr);
  EXPECT_EQ(lrs, (std::vector<double>{0.1, 0.2, 0.4 * 3 / 4, 0.4, 0.4, 0.4}));
  EXPECT_DOUBLE_EQ(opt.step(g, 0.5).lr, 0.2);
}

TEST(MasterAdamW, DecaysByCosineAfterTheWarmUpAndHoldsTheFloor) {
  const AdamWOptions o{.lr = 1.0, .warmup_steps = 2, .decay_steps = 6, .min_lr_ratio = 0.1};
  EXPECT_DOUBLE_EQ(lr_schedule_factor(o, 1), 0.5);     // warm-up
  EXPECT_DOUBLE_EQ(lr_schedule_factor(o, 2), 1.0);     // the peak: the decay starts here
  EXPECT_NEAR(lr_schedule_factor(o, 4), 0.55, 1e-12);  // half-way: the middle of 1 and 0.1
  EXPECT_NEAR(lr_schedule_factor(o, 6), 0.1, 1e-12);
  EXPECT_NEAR(lr_schedule_factor(o, 60), 0.1, 1e-12);  // held past the end
  for (std::int64_t t = 2; t < 6; ++t)
    EXPECT_GT(lr_schedule_factor(o, t), lr_schedule_factor(o, t + 1)) << t;
  EXPECT_DOUBLE_EQ(lr_schedule_factor({.lr = 1.0}, 1000), 1.0);  // no decay asked: constant
  Params a = make_params(4);
  MasterAdamW opt = MasterAdamW::create(a, {.lr = 0.4, .max_grad_norm = 0, .decay_steps = 3}, {});
  const at::Tensor g = at::ones({opt.numel()});
  std::vector<double> lrs;
  for (int s = 0; s < 4; ++s) lrs.push_back(opt.step(g).lr);
  EXPECT_NEAR(lrs[0], 0.4, 1e-12);
  EXPECT_NEAR(lrs[1], 0.4 * 0.55, 1e-12);
  EXPECT_NEAR(lrs[2], 0.04, 1e-12);
  EXPECT_NEAR(lrs[3], 0.04, 1e-12);
}

TEST(MasterAdamW, SkipsANonFiniteGradient) {
  Params a = make_params(5), before = clone_params(a);
  MasterAdamW opt = MasterAdamW::create(a, {}, {});
  at::Tensor g = at::ones({opt.numel()});
  g[3] = std::numeric_limits<float>::quiet_NaN();
  OptimizerStepStats s = opt.step(g);
  EXPECT_TRUE(s.skipped);
  EXPECT_EQ(opt.steps(), 0);
  EXPECT_TRUE(all_equal(a, before));
}

// Runs `steps` steps of gradients first_step.. on opt.
void run_steps(MasterAdamW& opt, const Params& p, int first_step, int steps) {
  for (int s = first_step; s < first_step + steps; ++s) {
    set_grads(p, grads_for(p, s));
    opt.step(opt.flat_grad());
  }
}

TEST(MasterAdamW, StateThroughACheckpointContinuesBitIdentically) {
  TempDir dir;
  const AdamWOptions o{.lr = 1e-2, .weight_decay = 0.1, .max_grad_norm = 1.0, .warmup_steps = 5};
  Params initial = make_params(6);
  Params a = clone_params(initial);
  MasterAdamW uninterrupted = MasterAdamW::create(a, o, {});
  run_steps(uninterrupted, a, 0, 10);
  {
    auto stage = CheckpointStaging::begin(dir.str(), 10);
    ASSERT_TRUE(stage) << stage.error().to_string();
    ASSERT_TRUE(stage->add_tensors(optimizer_file_name("", 0), uninterrupted.state()));
    ASSERT_TRUE(stage->add_trainer_state({.step = 10}));
    ASSERT_TRUE(stage->seal());
  }
  run_steps(uninterrupted, a, 10, 10);

  auto ck = load_latest_checkpoint(dir.str());
  ASSERT_TRUE(ck) << ck.error().to_string();
  auto state = ck->load_tensors(optimizer_file_name("", 0));
  ASSERT_TRUE(state) << state.error().to_string();
  Params b = clone_params(initial);  // the restore overwrites these with the master weights
  MasterAdamW resumed = MasterAdamW::create(b, o, {});
  Status st = resumed.load_state(*state);
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(resumed.steps(), 10);
  run_steps(resumed, b, 10, 10);
  EXPECT_TRUE(all_equal(a, b)) << max_diff(a, b);
  for (const char* key : {"master", "exp_avg", "exp_avg_sq", "step"}) {
    EXPECT_TRUE(at::equal(resumed.state().at(key), uninterrupted.state().at(key))) << key;
  }

  // Another layout or sharding is refused and changes nothing.
  Params other = make_params(6);
  other.pop_back();
  MasterAdamW wrong = MasterAdamW::create(other, o, {});
  Status bad = wrong.load_state(*state);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "optimizer.bad_state");
  MasterAdamW sharded =
      MasterAdamW::create(clone_params(initial), o, {.rank = 1, .world_size = 2, .sharded = true});
  EXPECT_FALSE(sharded.load_state(*state));
  EXPECT_EQ(sharded.steps(), 0);
}

// ---- checkpoints ----

struct Written {
  Transformer actor;
  std::map<std::string, at::Tensor> optimizer;
};

// Writes checkpoint `step` under root: actor, critic (backbone + value head), an optimizer
// file, trainer_state with extra {"sampler": {"position": step * 10}}.
Written write_checkpoint(const std::string& root, std::uint64_t step) {
  Transformer actor = Transformer::random(testing::tiny_config("qwen2"), step);
  Transformer critic = Transformer::random(testing::tiny_config("qwen2"), step + 100);
  ValueHead head = ValueHead::zeros(critic.config().hidden_size, at::TensorOptions());
  head.bias.fill_(static_cast<double>(step));
  std::map<std::string, at::Tensor> opt = {
      {"master", at::randn({100})},
      {"step", at::full({1}, static_cast<std::int64_t>(step), at::kLong)}};
  auto stage = CheckpointStaging::begin(root, step);
  EXPECT_TRUE(stage) << stage.error().to_string();
  EXPECT_TRUE(actor.save(stage->path()));
  auto critic_dir = stage->subdir("critic");
  EXPECT_TRUE(critic_dir);
  EXPECT_TRUE(critic.save(*critic_dir));
  EXPECT_TRUE(head.save(*critic_dir + "/value_head.safetensors"));
  EXPECT_TRUE(stage->add_tensors(optimizer_file_name("", 0), opt));
  EXPECT_TRUE(stage->add_trainer_state({.step = step,
                                        .stage = "agentic-ppo",
                                        .policy_version = step + 1,
                                        .extra = {{"sampler", {{"position", step * 10}}}}}));
  auto sealed = stage->seal();
  EXPECT_TRUE(sealed) << sealed.error().to_string();
  return {std::move(actor), opt};
}

TEST(Checkpoint, RoundTrip) {
  TempDir dir;
  torch::manual_seed(42);
  Written w = write_checkpoint(dir.str(), 7);
  const at::Tensor next = torch::rand({8});  // the numbers drawn right after the save
  torch::rand({100});

  auto ck = load_latest_checkpoint(dir.str());
  ASSERT_TRUE(ck) << ck.error().to_string();
  EXPECT_EQ(ck->path, dir.str(checkpoint_dir_name(7)));
  EXPECT_EQ(ck->step, 7u);
  EXPECT_TRUE(ck->skipped.empty());
  EXPECT_EQ(ck->trainer_state["step"], 7);
  EXPECT_EQ(ck->trainer_state["stage"], "agentic-ppo");
  EXPECT_EQ(ck->trainer_state["policy_version"], 8);
  EXPECT_EQ(ck->trainer_state["sampler"]["position"], 70);
  EXPECT_EQ(ck->files, (std::vector<std::string>{
                           "config.json", "critic/config.json", "critic/model.safetensors",
                           "critic/value_head.safetensors", "model.safetensors",
                           "optimizer-rank-0.safetensors", "trainer_state.json"}));
  EXPECT_FALSE(fs::exists(ck->file(".digests")));

  auto opt = ck->load_tensors(optimizer_file_name("", 0));
  ASSERT_TRUE(opt) << opt.error().to_string();
  ASSERT_EQ(opt->size(), w.optimizer.size());
  for (const auto& [k, t] : w.optimizer) EXPECT_TRUE(at::equal(opt->at(k), t)) << k;

  auto actor = Transformer::load(ck->path);
  ASSERT_TRUE(actor) << actor.error().to_string();
  auto want = w.actor.parameters(), got = actor->parameters();
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(at::equal(want[i].second, got[i].second)) << want[i].first;
  }
  auto head = ValueHead::load(ck->file("critic/value_head.safetensors"), at::TensorOptions());
  ASSERT_TRUE(head);
  EXPECT_EQ(head->bias.item<double>(), 7.0);
  EXPECT_TRUE(Transformer::load(ck->file("critic")));

  ASSERT_TRUE(restore_rng_state(ck->trainer_state["rng"]));
  EXPECT_TRUE(at::equal(torch::rand({8}), next));
}

// Flips one byte at `at` (from the end when negative).
void flip_byte(const std::string& path, std::int64_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::int64_t size = f.tellg();
  const std::int64_t pos = at >= 0 ? at : size + at;
  f.seekg(pos);
  char c = 0;
  f.read(&c, 1);
  c ^= 0x01;
  f.seekp(pos);
  f.write(&c, 1);
}

// Copies a root with steps 1 and 2, damages step 2 with `damage`, and expects step 1 back with
// a warning about step 2 that names `names`.
void expect_fallback(const std::string& pristine,
                     const std::function<void(const std::string&)>& damage,
                     const std::string& names) {
  TempDir copy;
  fs::copy(pristine, copy.str(),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  damage(copy.str(checkpoint_dir_name(2)));
  auto ck = load_latest_checkpoint(copy.str());
  ASSERT_TRUE(ck) << ck.error().to_string();
  EXPECT_EQ(ck->step, 1u) << "damage to " << names << " went unnoticed";
  ASSERT_EQ(ck->skipped.size(), 1u);
  EXPECT_NE(ck->skipped[0].find(checkpoint_dir_name(2)), std::string::npos) << ck->skipped[0];
  EXPECT_NE(ck->skipped[0].find(names), std::string::npos) << ck->skipped[0];
}

TEST(Checkpoint, DamagedNewestFallsBackToThePrevious) {
  TempDir pristine;
  write_checkpoint(pristine.str(), 1);
  write_checkpoint(pristine.str(), 2);
  auto ck = load_latest_checkpoint(pristine.str());
  ASSERT_TRUE(ck);
  ASSERT_EQ(ck->step, 2u);
  for (const std::string& f : ck->files) {
    // A flipped byte at the start, middle and end of every file.
    const auto size = static_cast<std::int64_t>(fs::file_size(ck->file(f)));
    for (std::int64_t at : {std::int64_t{0}, size / 2, std::int64_t{-1}}) {
      expect_fallback(
          pristine.str(), [&](const std::string& d) { flip_byte(d + "/" + f, at); }, f);
    }
    expect_fallback(
        pristine.str(), [&](const std::string& d) { fs::resize_file(d + "/" + f, size - 1); }, f);
    expect_fallback(
        pristine.str(),
        [&](const std::string& d) { std::ofstream(d + "/" + f, std::ios::app) << "x"; }, f);
    expect_fallback(
        pristine.str(), [&](const std::string& d) { fs::remove(d + "/" + f); }, f);
  }
  // CHECKSUMS: missing (a torn write), damaged anywhere, truncated.
  expect_fallback(
      pristine.str(), [](const std::string& d) { fs::remove(d + "/CHECKSUMS"); }, "CHECKSUMS");
  const auto sums = static_cast<std::int64_t>(fs::file_size(ck->file("CHECKSUMS")));
  for (std::int64_t at = 0; at < sums; at += 7) {
    SCOPED_TRACE("CHECKSUMS byte " + std::to_string(at));
    TempDir copy;
    fs::copy(pristine.str(), copy.str(), fs::copy_options::recursive);
    flip_byte(copy.str(checkpoint_dir_name(2) + "/CHECKSUMS"), at);
    auto got = load_latest_checkpoint(copy.str());
    ASSERT_TRUE(got);
    EXPECT_EQ(got->step, 1u);
  }
}

TEST(Checkpoint, StaleStagingIsIgnoredAndOldOnesRemoved) {
  TempDir dir;
  write_checkpoint(dir.str(), 3);
  // A killed writer of step 1 (older: removed) and one of step 5 (maybe still writing: kept).
  for (const char* name : {".tmp-step-00000001-999", ".tmp-step-00000005-999"}) {
    fs::create_directories(dir.str(name));
    std::ofstream(dir.str(name) + "/model.safetensors") << "partial";
  }
  auto ck = load_latest_checkpoint(dir.str());
  ASSERT_TRUE(ck) << ck.error().to_string();
  EXPECT_EQ(ck->step, 3u);
  EXPECT_TRUE(ck->skipped.empty());
  EXPECT_FALSE(fs::exists(dir.str(".tmp-step-00000001-999")));
  EXPECT_TRUE(fs::exists(dir.str(".tmp-step-00000005-999")));
  // An unsealed staging directory is not a checkpoint either.
  auto stage = CheckpointStaging::begin(dir.str(), 4);
  ASSERT_TRUE(stage);
  ASSERT_TRUE(stage->add_trainer_state({.step = 4}));
  EXPECT_EQ(load_latest_checkpoint(dir.str())->step, 3u);
  EXPECT_EQ(list_checkpoints(dir.str()), (std::vector<std::uint64_t>{3}));
}

TEST(Checkpoint, NoneIsNotFound) {
  TempDir dir;
  auto ck = load_latest_checkpoint(dir.str());
  ASSERT_FALSE(ck);
  EXPECT_EQ(ck.error().category, ErrorCategory::kNotFound);
  EXPECT_EQ(ck.error().code, "checkpoint.none");
}

TEST(Checkpoint, PruneKeepsTheNewestValidOne) {
  TempDir dir;
  for (std::uint64_t s = 1; s <= 6; ++s) write_checkpoint(dir.str(), s);
  // Steps 6 and 5 are damaged: the newest valid one is 4.
  fs::remove(dir.str(checkpoint_dir_name(6) + "/CHECKSUMS"));
  flip_byte(dir.str(checkpoint_dir_name(5) + "/model.safetensors"), 100);
  auto removed = prune_checkpoints(dir.str(), {.keep_last = 2, .protect_steps = {1}});
  ASSERT_TRUE(removed) << removed.error().to_string();
  EXPECT_EQ(removed->size(), 2u);
  EXPECT_EQ(list_checkpoints(dir.str()), (std::vector<std::uint64_t>{6, 5, 4, 1}));
  EXPECT_EQ(load_latest_checkpoint(dir.str())->step, 4u);
  for (const auto& e : fs::directory_iterator(dir.str())) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp", 0), 0u) << e.path();
  }
}

TEST(Checkpoint, RanksStageIntoOneCheckpoint) {
  TempDir dir;
  auto rank0 = CheckpointStaging::begin(dir.str(), 12);
  ASSERT_TRUE(rank0);
  auto rank1 = CheckpointStaging::attach(dir.str(), 12);  // another process on a shared disk
  ASSERT_TRUE(rank1) << rank1.error().to_string();
  EXPECT_EQ(rank1->path(), rank0->path());
  ASSERT_TRUE(rank0->add_tensors(optimizer_file_name("", 0), {{"x", at::zeros({3})}}));
  ASSERT_TRUE(rank1->add_tensors(optimizer_file_name("", 1), {{"x", at::ones({3})}}));
  ASSERT_TRUE(rank1->add_tensors(optimizer_file_name("critic", 1), {{"y", at::ones({2})}}));
  ASSERT_TRUE(rank0->add_trainer_state({.step = 12}));
  EXPECT_FALSE(rank0->add_file("../escape", "x"));
  EXPECT_FALSE(rank0->add_file(".hidden", "x"));
  auto sealed = rank0->seal();
  ASSERT_TRUE(sealed) << sealed.error().to_string();
  auto ck = load_latest_checkpoint(dir.str());
  ASSERT_TRUE(ck);
  EXPECT_EQ(ck->files, (std::vector<std::string>{
                           "critic-optimizer-rank-1.safetensors", "optimizer-rank-0.safetensors",
                           "optimizer-rank-1.safetensors", "trainer_state.json"}));
  EXPECT_TRUE(at::equal(ck->load_tensors("optimizer-rank-1.safetensors")->at("x"), at::ones({3})));
  EXPECT_FALSE(CheckpointStaging::attach(dir.str(), 12));  // sealed: nothing to attach to
}

TEST(Checkpoint, ResealingAStepReplacesIt) {
  TempDir dir;
  for (std::uint64_t version : {1, 2}) {
    auto stage = CheckpointStaging::begin(dir.str(), 9);
    ASSERT_TRUE(stage);
    ASSERT_TRUE(stage->add_trainer_state({.step = 9, .policy_version = version}));
    ASSERT_TRUE(stage->seal());
  }
  auto ck = load_latest_checkpoint(dir.str());
  ASSERT_TRUE(ck);
  EXPECT_EQ(ck->trainer_state["policy_version"], 2);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.str()), fs::directory_iterator()), 1);
}

// BLAKE2b-256 over the BLAKE2b-256 digests of 64 MiB pieces (checkpoint.h).
std::string piece_digest(const std::string& bytes) {
  const std::size_t piece = std::size_t{64} << 20;
  std::string digests;
  for (std::size_t off = 0; off < bytes.size(); off += piece) {
    unsigned char d[32];
    const std::size_t n = std::min(piece, bytes.size() - off);
    crypto_generichash(d, sizeof d, reinterpret_cast<const unsigned char*>(bytes.data() + off), n,
                       nullptr, 0);
    digests.append(reinterpret_cast<const char*>(d), sizeof d);
  }
  unsigned char d[32];
  crypto_generichash(d, sizeof d, reinterpret_cast<const unsigned char*>(digests.data()),
                     digests.size(), nullptr, 0);
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, d, sizeof d);
  return hex;
}

TEST(Checkpoint, DigestsArePieceWiseBlake2b) {
  TempDir dir;
  std::string big((std::size_t{64} << 20) + 12345, '\0');
  for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  auto stage = CheckpointStaging::begin(dir.str(), 1);
  ASSERT_TRUE(stage);
  ASSERT_TRUE(stage->add_file("written.bin", big));                         // hashed as written
  std::ofstream(stage->path() + "/external.bin", std::ios::binary) << big;  // hashed by seal()
  ASSERT_TRUE(stage->add_file("empty.bin", ""));
  ASSERT_TRUE(stage->add_trainer_state({.step = 1}));
  auto sealed = stage->seal();
  ASSERT_TRUE(sealed);
  std::ifstream in(*sealed + "/CHECKSUMS");
  std::map<std::string, std::string> digest_of;
  std::string line;
  std::getline(in, line);
  for (std::string d, size, name; in >> d >> size >> name;) digest_of[name] = d;
  EXPECT_EQ(digest_of["written.bin"], piece_digest(big));
  EXPECT_EQ(digest_of["external.bin"], piece_digest(big));
  EXPECT_EQ(digest_of["empty.bin"], piece_digest(""));
  EXPECT_TRUE(load_latest_checkpoint(dir.str()));
}

TEST(Checkpoint, TrainerStateRejectsReservedKeys) {
  TempDir dir;
  auto stage = CheckpointStaging::begin(dir.str(), 1);
  ASSERT_TRUE(stage);
  EXPECT_FALSE(stage->add_trainer_state({.step = 1, .extra = {{"rng", 1}}}));
  EXPECT_FALSE(stage->add_trainer_state({.step = 1, .extra = nlohmann::json::array()}));
}

}  // namespace
}  // namespace cuda_agent
