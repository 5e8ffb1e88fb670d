#include "messages/bench_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::with_format_version;

void expect_audit_eq(const AuditRecord& a, const AuditRecord& b) {
  EXPECT_EQ(a.task_hash, b.task_hash);
  EXPECT_EQ(a.artifact_hash, b.artifact_hash);
  EXPECT_EQ(a.toolchain, b.toolchain);
  EXPECT_EQ(a.torch_version, b.torch_version);
  EXPECT_EQ(a.driver_version, b.driver_version);
  EXPECT_EQ(a.gpu_name, b.gpu_name);
  EXPECT_EQ(a.sm_clock_mhz, b.sm_clock_mhz);
  EXPECT_EQ(a.mem_clock_mhz, b.mem_clock_mhz);
  EXPECT_EQ(a.precision_flags, b.precision_flags);
  EXPECT_EQ(a.checks_run, b.checks_run);
  EXPECT_EQ(a.worker_id, b.worker_id);
  EXPECT_EQ(a.measured_unix_ms, b.measured_unix_ms);
}

TEST(BenchCodec, RequestRoundTrips) {
  const BenchRequest in = wire_samples::bench_request();
  const std::string bytes = encode_bench_request(in);
  auto out = decode_bench_request(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->header.request_id, RequestId{"bench-91c0"});
  EXPECT_EQ(out->header.deadline_unix_ms, in.header.deadline_unix_ms);
  EXPECT_EQ(out->task.task_id, "level1/19_ReLU");
  EXPECT_EQ(out->task.content_hash, in.task.content_hash);
  EXPECT_EQ(out->artifact.hash, "9f2c4e0a5b1d7c3e");
  EXPECT_EQ(out->mode, BenchMode::kBenchmark);
  EXPECT_EQ(out->seeds, in.seeds);
  EXPECT_EQ(out->options.tolerance_profile, "strict");
  EXPECT_EQ(out->options.verify_input_sets, 5u);
  EXPECT_TRUE(out->options.remeasure_baselines);
  EXPECT_EQ(out->options.warmup_trials, 10u);
  EXPECT_EQ(out->options.timed_trials, 100u);
  EXPECT_EQ(out->options.input_sets, 8u);
  EXPECT_DOUBLE_EQ(out->options.checked_trial_fraction, 0.1);
  EXPECT_TRUE(out->options.allow_tf32);
  EXPECT_FALSE(out->payload.has_value());
  EXPECT_EQ(encode_bench_request(*out), bytes);
}

TEST(BenchCodec, RequestPayloadRoundTrips) {
  BenchRequest in = wire_samples::bench_request();
  in.payload = BenchPayload{"class Model: ...\n",
                            std::string("\x7f"
                                        "ELF\0\x01",
                                        6),
                            {{"k_launch",
                              {{"x", "const float*", ParamKind::kPointer},
                               {"n", "int", ParamKind::kInteger},
                               {"s", "cudaStream_t", ParamKind::kStream}}}},
                            "class ModelNew: ...\n",
                            "nvcc 13.0"};
  auto out = decode_bench_request(encode_bench_request(in));
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_TRUE(out->payload.has_value());
  EXPECT_EQ(out->payload->task_model_py, in.payload->task_model_py);
  EXPECT_EQ(out->payload->shared_object, in.payload->shared_object);
  ASSERT_EQ(out->payload->prototypes.size(), 1u);
  EXPECT_EQ(out->payload->prototypes[0].name, "k_launch");
  ASSERT_EQ(out->payload->prototypes[0].params.size(), 3u);
  EXPECT_EQ(out->payload->prototypes[0].params[1].kind, ParamKind::kInteger);
  EXPECT_EQ(out->payload->prototypes[0].params[2].c_type, "cudaStream_t");
  EXPECT_EQ(out->payload->model_new_py, in.payload->model_new_py);
  EXPECT_EQ(out->payload->toolchain, "nvcc 13.0");
}

TEST(BenchCodec, ResultReplyRoundTrips) {
  const BenchReply in{RequestId{"bench-91c0"}, wire_samples::bench_result()};
  const std::string bytes = encode_bench_reply(in);
  auto out = decode_bench_reply(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_TRUE(out->outcome) << out->outcome.error().to_string();
  const BenchResult& r = *out->outcome;
  const BenchResult& want = *in.outcome;
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_EQ(r.checks[2].name, "tolerance[seed=12]");
  EXPECT_FALSE(r.checks[2].passed);
  EXPECT_TRUE(r.checks[1].passed);
  EXPECT_DOUBLE_EQ(r.checks[1].max_abs_error, 3.1e-6);
  EXPECT_DOUBLE_EQ(r.checks[1].max_rel_error, 2.0e-5);
  EXPECT_EQ(r.checks[0].first_mismatch_index, -1);
  EXPECT_EQ(r.checks[2].first_mismatch_index, 1'048'577);
  EXPECT_EQ(r.checks[2].message, want.checks[2].message);
  EXPECT_EQ(r.candidate_trial_us, want.candidate_trial_us);
  EXPECT_EQ(r.eager_trial_us, want.eager_trial_us);
  EXPECT_EQ(r.compile_trial_us, want.compile_trial_us);
  EXPECT_DOUBLE_EQ(r.speedup_vs_eager, 1.309);
  EXPECT_DOUBLE_EQ(r.speedup_vs_compile, 1.036);
  EXPECT_EQ(r.reward.tier, -1);
  EXPECT_DOUBLE_EQ(r.reward.continuous, 0.27);
  expect_audit_eq(r.audit, want.audit);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].rule, "implausible_speedup");
  EXPECT_EQ(r.violations[0].detail, want.violations[0].detail);
  EXPECT_DOUBLE_EQ(r.harness_seconds, 1.53);
  EXPECT_EQ(r.phases_s, want.phases_s);
  EXPECT_EQ(encode_bench_reply(*out), bytes);
}

TEST(BenchCodec, ErrorReplyRoundTrips) {
  const BenchReply in{RequestId{"b-2"},
                      make_error(ErrorCategory::kUnavailable, "bench.gpu_fault", "Xid 79")};
  auto out = decode_bench_reply(encode_bench_reply(in));
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_FALSE(out->outcome);
  EXPECT_EQ(out->outcome.error().category, ErrorCategory::kUnavailable);
  EXPECT_EQ(out->outcome.error().code, "bench.gpu_fault");
}

TEST(BenchCodec, AuditRecordTravelsAlone) {
  const AuditRecord in = wire_samples::audit_record();
  auto out = decode_audit_record(encode_audit_record(in));
  ASSERT_TRUE(out) << out.error().to_string();
  expect_audit_eq(*out, in);
  EXPECT_EQ(decode_audit_record(encode_bench_request({})).error().code, "wire.wrong_type");
}

TEST(BenchCodec, EmptyAndExtremeValuesRoundTrip) {
  auto empty = decode_bench_reply(encode_bench_reply(BenchReply{}));
  ASSERT_TRUE(empty) << empty.error().to_string();
  EXPECT_TRUE(empty->outcome->checks.empty());
  EXPECT_TRUE(empty->outcome->candidate_trial_us.empty());
  EXPECT_EQ(empty->outcome->reward.tier, -1);  // the struct default is written, not assumed

  BenchRequest request;
  request.seeds = {0, std::numeric_limits<std::uint64_t>::max()};
  request.options.timed_trials = std::numeric_limits<std::uint32_t>::max();
  auto out = decode_bench_request(encode_bench_request(request));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->seeds, request.seeds);
  EXPECT_EQ(out->options.timed_trials, std::numeric_limits<std::uint32_t>::max());

  BenchReply reply{RequestId{"b"}, BenchResult{}};
  reply.outcome->reward.tier = std::numeric_limits<std::int8_t>::min();
  reply.outcome->checks.push_back({"nan", false, std::numeric_limits<double>::quiet_NaN(), 0,
                                   std::numeric_limits<std::int64_t>::max(), ""});
  auto back = decode_bench_reply(encode_bench_reply(reply));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->outcome->reward.tier, -128);
  EXPECT_TRUE(std::isnan(back->outcome->checks[0].max_abs_error));
  EXPECT_EQ(back->outcome->checks[0].first_mismatch_index,
            std::numeric_limits<std::int64_t>::max());
}

TEST(BenchCodec, AModeFromANewerPeerDecodesAsUnknown) {
  BenchRequest request = wire_samples::bench_request();
  request.mode = static_cast<BenchMode>(4);
  auto out = decode_bench_request(encode_bench_request(request));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->mode, BenchMode::kUnknown);
}

TEST(BenchCodec, RejectsANewerFormatVersion) {
  const std::string request = encode_bench_request(wire_samples::bench_request());
  EXPECT_EQ(decode_bench_request(with_format_version(request, true, 2)).error().code,
            "wire.version");
  const std::string reply = encode_bench_reply({RequestId{"b"}, wire_samples::bench_result()});
  EXPECT_EQ(decode_bench_reply(with_format_version(reply, false, 2)).error().code, "wire.version");
  const std::string audit = encode_audit_record(wire_samples::audit_record());
  EXPECT_EQ(decode_audit_record(with_format_version(audit, false, 2)).error().code, "wire.version");
}

TEST(BenchCodec, RejectsAnotherMessageType) {
  EXPECT_EQ(decode_bench_request(encode_compile_request({})).error().code, "wire.wrong_type");
  EXPECT_EQ(decode_bench_reply(encode_compile_reply({})).error().code, "wire.wrong_type");
}

}  // namespace
}  // namespace cuda_agent
