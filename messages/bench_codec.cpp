#include "messages/bench_codec.h"

#include "messages/bench.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using namespace wire_detail;  // NOLINT: the codec's vocabulary

CA_SAME_ENUM(BenchMode::kUnknown, wire::BenchMode::UNKNOWN);
CA_SAME_ENUM(BenchMode::kVerify, wire::BenchMode::VERIFY);
CA_SAME_ENUM(BenchMode::kBenchmark, wire::BenchMode::BENCHMARK);
CA_SAME_ENUM(BenchMode::kProfile, wire::BenchMode::PROFILE);

void set_audit(wire::AuditRecord::Builder out, const AuditRecord& in) {
  out.setTaskHash(text(in.task_hash));
  out.setArtifactHash(text(in.artifact_hash));
  out.setToolchain(text(in.toolchain));
  out.setTorchVersion(text(in.torch_version));
  out.setDriverVersion(text(in.driver_version));
  out.setGpuName(text(in.gpu_name));
  out.setSmClockMhz(in.sm_clock_mhz);
  out.setMemClockMhz(in.mem_clock_mhz);
  set_texts(out.initPrecisionFlags(in.precision_flags.size()), in.precision_flags);
  set_texts(out.initChecksRun(in.checks_run.size()), in.checks_run);
  out.setWorkerId(text(in.worker_id.value()));
  out.setMeasuredUnixMs(in.measured_unix_ms);
}

AuditRecord get_audit(wire::AuditRecord::Reader in) {
  AuditRecord out;
  out.task_hash = str(in.getTaskHash());
  out.artifact_hash = str(in.getArtifactHash());
  out.toolchain = str(in.getToolchain());
  out.torch_version = str(in.getTorchVersion());
  out.driver_version = str(in.getDriverVersion());
  out.gpu_name = str(in.getGpuName());
  out.sm_clock_mhz = in.getSmClockMhz();
  out.mem_clock_mhz = in.getMemClockMhz();
  out.precision_flags = get_texts(in.getPrecisionFlags());
  out.checks_run = get_texts(in.getChecksRun());
  out.worker_id = WorkerId{str(in.getWorkerId())};
  out.measured_unix_ms = in.getMeasuredUnixMs();
  return out;
}

void set_result(wire::BenchResult::Builder out, const BenchResult& in) {
  auto checks = out.initChecks(in.checks.size());
  for (unsigned i = 0; i < in.checks.size(); ++i) {
    const BenchCheck& c = in.checks[i];
    checks[i].setName(text(c.name));
    checks[i].setPassed(c.passed);
    checks[i].setMaxAbsError(c.max_abs_error);
    checks[i].setMaxRelError(c.max_rel_error);
    checks[i].setFirstMismatchIndex(c.first_mismatch_index);
    checks[i].setMessage(text(c.message));
  }
  set_values(out.initCandidateTrialsUs(in.candidate_trial_us.size()), in.candidate_trial_us);
  set_values(out.initEagerTrialsUs(in.eager_trial_us.size()), in.eager_trial_us);
  set_values(out.initCompileTrialsUs(in.compile_trial_us.size()), in.compile_trial_us);
  out.setSpeedupVsEager(in.speedup_vs_eager);
  out.setSpeedupVsCompile(in.speedup_vs_compile);
  auto reward = out.initReward();
  reward.setTier(in.reward.tier);
  reward.setContinuous(in.reward.continuous);
  set_audit(out.initAudit(), in.audit);
  auto violations = out.initViolations(in.violations.size());
  for (unsigned i = 0; i < in.violations.size(); ++i) {
    violations[i].setRule(text(in.violations[i].rule));
    violations[i].setDetail(text(in.violations[i].detail));
  }
  out.setProfileReport(text(in.profile_report));
  out.setHarnessSeconds(in.harness_seconds);
  auto phases = out.initPhases(static_cast<unsigned>(in.phases_s.size()));
  unsigned i = 0;
  for (const auto& [name, seconds] : in.phases_s) {
    phases[i].setName(text(name));
    phases[i++].setSeconds(seconds);
  }
}

BenchResult get_result(wire::BenchResult::Reader in) {
  BenchResult out;
  for (auto c : in.getChecks()) {
    out.checks.push_back(BenchCheck{str(c.getName()), c.getPassed(), c.getMaxAbsError(),
                                    c.getMaxRelError(), c.getFirstMismatchIndex(),
                                    str(c.getMessage())});
  }
  out.candidate_trial_us = get_values<double>(in.getCandidateTrialsUs());
  out.eager_trial_us = get_values<double>(in.getEagerTrialsUs());
  out.compile_trial_us = get_values<double>(in.getCompileTrialsUs());
  out.speedup_vs_eager = in.getSpeedupVsEager();
  out.speedup_vs_compile = in.getSpeedupVsCompile();
  auto reward = in.getReward();
  out.reward.tier = reward.getTier();
  out.reward.continuous = reward.getContinuous();
  out.audit = get_audit(in.getAudit());
  for (auto v : in.getViolations()) {
    out.violations.push_back(PolicyViolation{str(v.getRule()), str(v.getDetail())});
  }
  out.profile_report = str(in.getProfileReport());
  out.harness_seconds = in.getHarnessSeconds();
  for (auto p : in.getPhases()) out.phases_s[str(p.getName())] = p.getSeconds();
  return out;
}

}  // namespace

std::string encode_bench_request(const BenchRequest& request) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::BenchRequest>();
  stamp_request(root, request.header);
  auto task = root.initTask();
  task.setTaskId(text(request.task.task_id));
  task.setContentHash(text(request.task.content_hash));
  root.initArtifact().setHash(text(request.artifact.hash));
  root.setMode(enum_to_wire<wire::BenchMode>(request.mode));
  set_values(root.initSeeds(request.seeds.size()), request.seeds);
  auto options = root.initOptions();
  const BenchRunOptions& o = request.options;
  options.setToleranceProfile(text(o.tolerance_profile));
  options.setVerifyInputSets(o.verify_input_sets);
  options.setWarmupTrials(o.warmup_trials);
  options.setTimedTrials(o.timed_trials);
  options.setInputSets(o.input_sets);
  options.setRemeasureBaselines(o.remeasure_baselines);
  options.setCheckedTrialFraction(o.checked_trial_fraction);
  options.setAllowTf32(o.allow_tf32);
  if (request.payload) {
    const BenchPayload& p = *request.payload;
    auto w = root.initPayload();
    w.setTaskModelPy(text(p.task_model_py));
    w.setSharedObject(as_data(p.shared_object));
    auto protos = w.initPrototypes(p.prototypes.size());
    for (unsigned i = 0; i < p.prototypes.size(); ++i) {
      protos[i].setName(text(p.prototypes[i].name));
      auto params = protos[i].initParams(p.prototypes[i].params.size());
      for (unsigned j = 0; j < p.prototypes[i].params.size(); ++j) {
        const LauncherParam& q = p.prototypes[i].params[j];
        params[j].setName(text(q.name));
        params[j].setCType(text(q.c_type));
        params[j].setKind(enum_to_wire<wire::ParamKind>(q.kind));
      }
    }
    w.setModelNewPy(text(p.model_new_py));
    w.setToolchain(text(p.toolchain));
  }
  return capnp_io::to_bytes(message);
}

Expected<BenchRequest> decode_bench_request(std::string_view bytes, const DecodeLimits& limits) {
  static constexpr const char* kWhat = "BenchRequest";
  return capnp_io::read_root<wire::BenchRequest>(
      bytes, limits, kWhat, [](wire::BenchRequest::Reader r) -> Expected<BenchRequest> {
        BenchRequest out;
        ASSIGN_OR_RETURN(out.header, read_request_header(r, kWhat));
        auto task = r.getTask();
        out.task = TaskRef{str(task.getTaskId()), str(task.getContentHash())};
        out.artifact = ArtifactRef{str(r.getArtifact().getHash())};
        out.mode = enum_from_wire(r.getMode(), BenchMode::kProfile);
        out.seeds = get_values<std::uint64_t>(r.getSeeds());
        auto o = r.getOptions();
        out.options.tolerance_profile = str(o.getToleranceProfile());
        out.options.verify_input_sets = o.getVerifyInputSets();
        out.options.warmup_trials = o.getWarmupTrials();
        out.options.timed_trials = o.getTimedTrials();
        out.options.input_sets = o.getInputSets();
        out.options.remeasure_baselines = o.getRemeasureBaselines();
        out.options.checked_trial_fraction = o.getCheckedTrialFraction();
        out.options.allow_tf32 = o.getAllowTf32();
        if (r.hasPayload()) {
          auto w = r.getPayload();
          BenchPayload p;
          p.task_model_py = str(w.getTaskModelPy());
          p.shared_object = from_data(w.getSharedObject());
          for (auto proto : w.getPrototypes()) {
            LauncherPrototype lp{str(proto.getName()), {}};
            for (auto q : proto.getParams())
              lp.params.push_back({str(q.getName()), str(q.getCType()),
                                   enum_from_wire(q.getKind(), ParamKind::kStream)});
            p.prototypes.push_back(std::move(lp));
          }
          p.model_new_py = str(w.getModelNewPy());
          p.toolchain = str(w.getToolchain());
          out.payload = std::move(p);
        }
        return out;
      });
}

std::string encode_bench_reply(const BenchReply& reply) {
  return encode_reply<wire::BenchReply>(reply, set_result);
}

Expected<BenchReply> decode_bench_reply(std::string_view bytes, const DecodeLimits& limits) {
  return decode_reply<wire::BenchReply, BenchReply>(bytes, limits, "BenchReply", get_result);
}

std::string encode_audit_record(const AuditRecord& record) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::AuditRecordFrame>();
  stamp(root);
  set_audit(root.initRecord(), record);
  return capnp_io::to_bytes(message);
}

Expected<AuditRecord> decode_audit_record(std::string_view bytes, const DecodeLimits& limits) {
  static constexpr const char* kWhat = "AuditRecord";
  return capnp_io::read_root<wire::AuditRecordFrame>(
      bytes, limits, kWhat, [](wire::AuditRecordFrame::Reader r) -> Expected<AuditRecord> {
        RETURN_IF_ERROR(check_stamp(r, kWhat));
        return get_audit(r.getRecord());
      });
}

std::string_view to_string(BenchMode mode) {
  switch (mode) {
    case BenchMode::kVerify: return "verify";
    case BenchMode::kBenchmark: return "benchmark";
    case BenchMode::kProfile: return "profile";
    case BenchMode::kUnknown: break;
  }
  return "unknown";
}

}  // namespace cuda_agent
