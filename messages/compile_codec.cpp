#include "messages/compile_codec.h"

#include "messages/compile.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using namespace wire_detail;  // NOLINT: the codec's vocabulary

CA_SAME_ENUM(LibraryPolicy::kUnknown, wire::LibraryPolicy::UNKNOWN);
CA_SAME_ENUM(LibraryPolicy::kDefault, wire::LibraryPolicy::DEFAULT);
CA_SAME_ENUM(LibraryPolicy::kPure, wire::LibraryPolicy::PURE);
CA_SAME_ENUM(ParamKind::kUnknown, wire::ParamKind::UNKNOWN);
CA_SAME_ENUM(ParamKind::kPointer, wire::ParamKind::POINTER);
CA_SAME_ENUM(ParamKind::kInteger, wire::ParamKind::INTEGER);
CA_SAME_ENUM(ParamKind::kFloating, wire::ParamKind::FLOATING);
CA_SAME_ENUM(ParamKind::kStream, wire::ParamKind::STREAM);

void set_result(wire::CompileResult::Builder out, const CompileResult& in) {
  out.setArtifactHash(text(in.artifact_hash));
  out.setArtifactSizeBytes(in.artifact_size_bytes);
  auto prototypes = out.initPrototypes(in.prototypes.size());
  for (unsigned i = 0; i < in.prototypes.size(); ++i) {
    const LauncherPrototype& p = in.prototypes[i];
    prototypes[i].setName(text(p.name));
    auto params = prototypes[i].initParams(p.params.size());
    for (unsigned j = 0; j < p.params.size(); ++j) {
      params[j].setName(text(p.params[j].name));
      params[j].setCType(text(p.params[j].c_type));
      params[j].setKind(enum_to_wire<wire::ParamKind>(p.params[j].kind));
    }
  }
  auto kernels = out.initKernels(in.kernels.size());
  for (unsigned i = 0; i < in.kernels.size(); ++i) {
    const KernelResources& k = in.kernels[i];
    kernels[i].setMangledName(text(k.mangled_name));
    kernels[i].setDemangledName(text(k.demangled_name));
    kernels[i].setRegisters(k.registers);
    kernels[i].setStaticSmemBytes(k.static_smem_bytes);
    kernels[i].setStackBytes(k.stack_bytes);
    kernels[i].setSpillStoreBytes(k.spill_store_bytes);
    kernels[i].setSpillLoadBytes(k.spill_load_bytes);
  }
  set_texts(out.initWarnings(in.warnings.size()), in.warnings);
  out.setLog(text(in.log));
  auto timings = out.initFileTimings(in.file_timings.size());
  for (unsigned i = 0; i < in.file_timings.size(); ++i) {
    timings[i].setPath(text(in.file_timings[i].path));
    timings[i].setSeconds(in.file_timings[i].seconds);
  }
  out.setTotalSeconds(in.total_seconds);
  out.setCacheHit(in.cache_hit);
  out.setArtifact(as_data(in.artifact));
  out.setToolchain(text(in.toolchain));
  out.setSandboxed(text(in.sandboxed));
}

CompileResult get_result(wire::CompileResult::Reader in) {
  CompileResult out;
  out.artifact_hash = str(in.getArtifactHash());
  out.artifact_size_bytes = in.getArtifactSizeBytes();
  for (auto p : in.getPrototypes()) {
    LauncherPrototype proto;
    proto.name = str(p.getName());
    for (auto param : p.getParams()) {
      proto.params.push_back(LauncherParam{str(param.getName()), str(param.getCType()),
                                           enum_from_wire(param.getKind(), ParamKind::kStream)});
    }
    out.prototypes.push_back(std::move(proto));
  }
  for (auto k : in.getKernels()) {
    KernelResources r;
    r.mangled_name = str(k.getMangledName());
    r.demangled_name = str(k.getDemangledName());
    r.registers = k.getRegisters();
    r.static_smem_bytes = k.getStaticSmemBytes();
    r.stack_bytes = k.getStackBytes();
    r.spill_store_bytes = k.getSpillStoreBytes();
    r.spill_load_bytes = k.getSpillLoadBytes();
    out.kernels.push_back(std::move(r));
  }
  out.warnings = get_texts(in.getWarnings());
  out.log = str(in.getLog());
  for (auto t : in.getFileTimings()) {
    out.file_timings.push_back(FileTiming{str(t.getPath()), t.getSeconds()});
  }
  out.total_seconds = in.getTotalSeconds();
  out.cache_hit = in.getCacheHit();
  out.artifact = from_data(in.getArtifact());
  out.toolchain = str(in.getToolchain());
  out.sandboxed = str(in.getSandboxed());
  return out;
}

}  // namespace

std::string encode_compile_request(const CompileRequest& request) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::CompileRequest>();
  stamp_request(root, request.header);
  auto files = root.initFiles(request.files.size());
  for (unsigned i = 0; i < request.files.size(); ++i) {
    files[i].setPath(text(request.files[i].path));
    files[i].setContent(text(request.files[i].content));
  }
  root.setTargetArch(text(request.target_arch));
  root.setLibraryPolicy(enum_to_wire<wire::LibraryPolicy>(request.library_policy));
  set_texts(root.initExtraFlags(request.extra_flags.size()), request.extra_flags);
  return capnp_io::to_bytes(message);
}

Expected<CompileRequest> decode_compile_request(std::string_view bytes,
                                                const DecodeLimits& limits) {
  static constexpr const char* kWhat = "CompileRequest";
  return capnp_io::read_root<wire::CompileRequest>(
      bytes, limits, kWhat, [](wire::CompileRequest::Reader r) -> Expected<CompileRequest> {
        CompileRequest out;
        ASSIGN_OR_RETURN(out.header, read_request_header(r, kWhat));
        for (auto f : r.getFiles()) {
          out.files.push_back(SourceFile{str(f.getPath()), str(f.getContent())});
        }
        out.target_arch = str(r.getTargetArch());
        out.library_policy = enum_from_wire(r.getLibraryPolicy(), LibraryPolicy::kPure);
        out.extra_flags = get_texts(r.getExtraFlags());
        return out;
      });
}

std::string encode_compile_reply(const CompileReply& reply) {
  return encode_reply<wire::CompileReply>(reply, set_result);
}

Expected<CompileReply> decode_compile_reply(std::string_view bytes, const DecodeLimits& limits) {
  return decode_reply<wire::CompileReply, CompileReply>(bytes, limits, "CompileReply", get_result);
}

std::string_view to_string(LibraryPolicy policy) {
  switch (policy) {
    case LibraryPolicy::kDefault: return "default";
    case LibraryPolicy::kPure: return "pure";
    case LibraryPolicy::kUnknown: break;
  }
  return "unknown";
}

Expected<LibraryPolicy> parse_library_policy(std::string_view name) {
  for (LibraryPolicy p : {LibraryPolicy::kDefault, LibraryPolicy::kPure}) {
    if (name == to_string(p)) return p;
  }
  return make_error(ErrorCategory::kInvalidInput, "compile.library_policy",
                    "unknown library policy '" + std::string(name) + "' (default or pure)");
}

std::string_view to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::kPointer: return "pointer";
    case ParamKind::kInteger: return "integer";
    case ParamKind::kFloating: return "floating";
    case ParamKind::kStream: return "stream";
    case ParamKind::kUnknown: break;
  }
  return "unknown";
}

}  // namespace cuda_agent
