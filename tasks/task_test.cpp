// The task model: content hash, id scheme, JSON body round trip and its version check.
#include "tasks/task.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(TaskId, IsSuiteNameAndHashPrefix) {
  // SHA-256 test vector (FIPS 180-2): "abc".
  EXPECT_EQ(task_content_hash("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(make_task_id("kernelbench/level1", "19_ReLU", task_content_hash("abc")).value(),
            "kernelbench/level1/19_ReLU-ba7816bf8f01");
  EXPECT_EQ(make_task_id("s", "a b/c\xff", "sha256:0123456789abcdef").value(),
            "s/a_b_c_-0123456789ab");
  EXPECT_EQ(make_task_id("s", "", "0123456789abcdef").value(), "s/task-0123456789ab");
}

Task sample() {
  StaticReport r;
  r.ok = true;
  r.ops = {"nn.Conv2d", "torch.relu"};
  r.imports = {"torch", "torch.nn"};
  r.init_params = {"c_in", "c_out"};
  r.forward_params = {"x"};
  r.init_inputs = {{.expr = "c_in", .kind = "value", .value_json = "3"},
                   {.expr = "scale", .kind = "value", .value_json = "0.5"}};
  r.inputs = {{.expr = "torch.randn(8, 3, 32, 32)",
               .kind = "tensor",
               .factory = "randn",
               .shape = {8, 3, 32, 32},
               .has_shape = true,
               .dtype = "float32"},
              {.expr = "make()", .kind = "unknown"}};
  r.warnings = {"a warning"};
  Task t = task_from_source("kb/l2", "1_Conv2D_ReLU", "import torch\n# \xc3\xa9\n", r,
                            "kernelbench", "dir/1_Conv2D_ReLU.py", 1234);
  t.declared_ops = {"Conv2d", "ReLU"};
  t.baselines.push_back({.device = "NVIDIA H200", .torch_version = "2.11", .eager_ms = 1.5});
  t.filters.push_back({.filter = "eager_time",
                       .passed = false,
                       .reason = "0.2 ms < 1 ms",
                       .unix_ms = 99,
                       .details_json = R"({"eager_ms":0.2})"});
  return t;
}

TEST(TaskBody, RoundTripsThroughTheStoreRecord) {
  const Task t = sample();
  EXPECT_EQ(t.filters.at(0).filter, "static");
  EXPECT_EQ(t.filters.at(0).reason, "a warning");
  TaskRecord rec = to_record(t, 777);
  EXPECT_EQ(rec.task_id, t.id);
  EXPECT_EQ(rec.created_unix_ms, 777);
  auto back = from_record(rec);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(encode_task(*back), encode_task(t));
  EXPECT_EQ(back->source, t.source);
  EXPECT_EQ(back->inputs.at(0).shape, (std::vector<std::int64_t>{8, 3, 32, 32}));
  EXPECT_FALSE(back->inputs.at(1).has_shape);
  EXPECT_EQ(back->init_inputs.at(1).value_json, "0.5");
  EXPECT_EQ(back->filters.at(1).details_json, R"({"eager_ms":0.2})");
  EXPECT_EQ(back->baselines.at(0).eager_ms, 1.5);
}

TEST(TaskBody, RefusesCorruptNewerAndMismatchedBodies) {
  const Task t = sample();
  TaskRecord rec = to_record(t, 1);
  std::string body = rec.body;

  rec.body = "{not json";
  auto bad = from_record(rec);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "task.corrupt");
  EXPECT_NE(bad.error().message.find(t.id.value()), std::string::npos);

  rec.body = body;
  const std::string v = "\"version\":1";
  rec.body.replace(rec.body.find(v), v.size(), "\"version\":99");
  auto newer = from_record(rec);
  ASSERT_FALSE(newer);
  EXPECT_EQ(newer.error().code, "task.newer_version");

  rec.body = body;
  rec.suite = "other";
  EXPECT_EQ(from_record(rec).error().code, "task.corrupt");

  rec = to_record(t, 1);
  const std::string src = "import torch";
  rec.body.replace(rec.body.find(src), src.size(), "import numpy");  // source no longer matches
  auto tampered = from_record(rec);
  ASSERT_FALSE(tampered);
  EXPECT_NE(tampered.error().message.find("content hash"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent
