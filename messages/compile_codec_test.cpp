#include "messages/compile_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include "messages/wire_samples.h"

namespace cuda_agent {
namespace {

using wire_samples::with_format_version;

TEST(CompileCodec, RequestRoundTrips) {
  const CompileRequest in = wire_samples::compile_request();
  const std::string bytes = encode_compile_request(in);
  auto out = decode_compile_request(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->header.format_version, 1);
  EXPECT_EQ(out->header.request_id, in.header.request_id);
  EXPECT_EQ(out->header.run_id, in.header.run_id);
  EXPECT_EQ(out->header.policy_version, PolicyVersion{42});
  EXPECT_EQ(out->header.deadline_unix_ms, in.header.deadline_unix_ms);
  ASSERT_EQ(out->files.size(), 2u);
  EXPECT_EQ(out->files[0].path, "kernels/scale_relu.cu");
  EXPECT_EQ(out->files[0].content, in.files[0].content);
  EXPECT_EQ(out->files[1].content, in.files[1].content);
  EXPECT_EQ(out->target_arch, "sm_90");
  EXPECT_EQ(out->library_policy, LibraryPolicy::kPure);
  EXPECT_EQ(out->extra_flags, in.extra_flags);
  EXPECT_EQ(encode_compile_request(*out), bytes);  // nothing lost on the way back
}

TEST(CompileCodec, ResultReplyRoundTrips) {
  const CompileReply in{RequestId{"compile-7f3a"}, wire_samples::compile_result()};
  const std::string bytes = encode_compile_reply(in);
  auto out = decode_compile_reply(bytes);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->request_id, RequestId{"compile-7f3a"});
  ASSERT_TRUE(out->outcome) << out->outcome.error().to_string();
  const CompileResult& r = *out->outcome;
  const CompileResult& want = *in.outcome;
  EXPECT_EQ(r.artifact_hash, want.artifact_hash);
  EXPECT_EQ(r.artifact_size_bytes, 912'384u);
  ASSERT_EQ(r.prototypes.size(), 2u);
  EXPECT_EQ(r.prototypes[0].name, "scale_relu_launch");
  ASSERT_EQ(r.prototypes[0].params.size(), 4u);
  EXPECT_EQ(r.prototypes[0].params[0].c_type, "const float*");
  EXPECT_EQ(r.prototypes[0].params[2].kind, ParamKind::kInteger);
  EXPECT_EQ(r.prototypes[0].params[3].kind, ParamKind::kStream);
  EXPECT_EQ(r.prototypes[1].params[0].kind, ParamKind::kFloating);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[1].mangled_name, want.kernels[1].mangled_name);
  EXPECT_EQ(r.kernels[1].demangled_name, want.kernels[1].demangled_name);
  EXPECT_EQ(r.kernels[1].registers, 168u);
  EXPECT_EQ(r.kernels[1].static_smem_bytes, 49'152u);
  EXPECT_EQ(r.kernels[1].stack_bytes, 16u);
  EXPECT_EQ(r.kernels[1].spill_store_bytes, 8u);
  EXPECT_EQ(r.kernels[1].spill_load_bytes, 8u);
  EXPECT_EQ(r.warnings, want.warnings);
  EXPECT_EQ(r.log, want.log);
  ASSERT_EQ(r.file_timings.size(), 2u);
  EXPECT_EQ(r.file_timings[1].path, "kernels/gemm.cu");
  EXPECT_DOUBLE_EQ(r.file_timings[1].seconds, 3.5);
  EXPECT_DOUBLE_EQ(r.total_seconds, 6.03);
  EXPECT_FALSE(r.cache_hit);
  EXPECT_EQ(encode_compile_reply(*out), bytes);
}

TEST(CompileCodec, ErrorReplyRoundTrips) {
  const CompileReply in{RequestId{"c-1"},
                        make_error(ErrorCategory::kPolicy, "policy.header",
                                   "kernels/x.cu:1: <torch/torch.h> is not allowed")};
  auto out = decode_compile_reply(encode_compile_reply(in));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->request_id, RequestId{"c-1"});
  ASSERT_FALSE(out->outcome);
  EXPECT_EQ(out->outcome.error().category, ErrorCategory::kPolicy);
  EXPECT_EQ(out->outcome.error().code, "policy.header");
  EXPECT_EQ(out->outcome.error().message, "kernels/x.cu:1: <torch/torch.h> is not allowed");
}

TEST(CompileCodec, EmptyValuesRoundTrip) {
  auto request = decode_compile_request(encode_compile_request(CompileRequest{}));
  ASSERT_TRUE(request) << request.error().to_string();
  EXPECT_TRUE(request->files.empty());
  EXPECT_TRUE(request->extra_flags.empty());
  EXPECT_EQ(request->library_policy, LibraryPolicy::kDefault);
  auto reply = decode_compile_reply(encode_compile_reply(CompileReply{}));
  ASSERT_TRUE(reply) << reply.error().to_string();
  ASSERT_TRUE(reply->outcome);
  EXPECT_TRUE(reply->outcome->prototypes.empty());
  EXPECT_TRUE(reply->outcome->artifact_hash.empty());
}

TEST(CompileCodec, ExtremeValuesAndBinaryTextSurvive) {
  CompileReply in{RequestId{std::string("id\0with-nul", 11)}, CompileResult{}};
  CompileResult& r = *in.outcome;
  r.artifact_size_bytes = std::numeric_limits<std::uint64_t>::max();
  r.kernels.push_back({"k", "k()", std::numeric_limits<std::uint32_t>::max(), 0xffffffffu,
                       0xffffffffu, 0xffffffffu, 0xffffffffu});
  r.total_seconds = std::numeric_limits<double>::infinity();
  r.log = std::string(1 << 20, 'x');  // a 1 MiB log
  r.cache_hit = true;
  r.artifact = std::string(
      "\x7f"
      "ELF\0\1\2",
      7);  // binary bytes, NUL included
  r.toolchain = "nvcc 13.0\ng++ 12";
  r.sandboxed = "uid 61000";
  auto out = decode_compile_reply(encode_compile_reply(in));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->request_id.value().size(), 11u);
  EXPECT_EQ(out->outcome->artifact_size_bytes, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(out->outcome->kernels[0].registers, std::numeric_limits<std::uint32_t>::max());
  EXPECT_EQ(out->outcome->total_seconds, std::numeric_limits<double>::infinity());
  EXPECT_EQ(out->outcome->log.size(), 1u << 20);
  EXPECT_TRUE(out->outcome->cache_hit);
  EXPECT_EQ(out->outcome->artifact, r.artifact);
  EXPECT_EQ(out->outcome->toolchain, r.toolchain);
  EXPECT_EQ(out->outcome->sandboxed, r.sandboxed);
}

TEST(CompileCodec, EnumValuesFromANewerPeerDecodeAsUnknown) {
  CompileRequest request = wire_samples::compile_request();
  request.library_policy = static_cast<LibraryPolicy>(9);
  auto out = decode_compile_request(encode_compile_request(request));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->library_policy, LibraryPolicy::kUnknown);

  CompileReply reply{RequestId{"c"}, wire_samples::compile_result()};
  reply.outcome->prototypes[0].params[0].kind = static_cast<ParamKind>(200);
  auto back = decode_compile_reply(encode_compile_reply(reply));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->outcome->prototypes[0].params[0].kind, ParamKind::kUnknown);
}

TEST(CompileCodec, RejectsANewerFormatVersion) {
  const std::string request = encode_compile_request(wire_samples::compile_request());
  EXPECT_TRUE(decode_compile_request(with_format_version(request, true, 1)));
  auto r = decode_compile_request(with_format_version(request, true, 2));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput);
  EXPECT_EQ(r.error().code, "wire.version");

  const std::string reply = encode_compile_reply({RequestId{"c"}, wire_samples::compile_result()});
  auto p = decode_compile_reply(with_format_version(reply, false, 0xffff));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, "wire.version");
}

TEST(CompileCodec, RejectsARequestWithoutHeader) {
  const std::string bytes = encode_compile_request(wire_samples::compile_request());
  auto r = decode_compile_request(wire_samples::without_request_header(bytes));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "wire.malformed");
  EXPECT_EQ(r.error().message, "CompileRequest: no request header");
}

TEST(CompileCodec, RejectsAnotherMessageType) {
  auto r = decode_compile_request(encode_compile_reply({}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().category, ErrorCategory::kInvalidInput);
  EXPECT_EQ(r.error().code, "wire.wrong_type");
  EXPECT_EQ(decode_compile_reply(encode_compile_request({})).error().code, "wire.wrong_type");
}

TEST(CompileCodec, RejectsTruncatedAndOversizedFrames) {
  const std::string bytes = encode_compile_request(wire_samples::compile_request());
  EXPECT_EQ(decode_compile_request(bytes.substr(0, bytes.size() - 8)).error().code,
            "wire.malformed");
  EXPECT_EQ(decode_compile_request(bytes.substr(0, 13)).error().code, "wire.malformed");
  EXPECT_EQ(decode_compile_request(bytes, {.max_bytes = 64}).error().code, "wire.too_large");
}

TEST(CompileCodec, LibraryPoliciesAreNamedAsTheManifestSpellsThem) {
  for (LibraryPolicy p : {LibraryPolicy::kDefault, LibraryPolicy::kPure}) {
    auto back = parse_library_policy(to_string(p));
    ASSERT_TRUE(back) << back.error().to_string();
    EXPECT_EQ(*back, p);
  }
  auto bad = parse_library_policy("cublas-only");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "compile.library_policy");
  EXPECT_NE(bad.error().message.find("'cublas-only'"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace cuda_agent
