// The compile protocol (messages/compile.capnp) as plain C++ types, and its codec. A client sends a
// CompileRequest to the compile farm; the farm answers with a CompileReply that holds either a
// CompileResult or a typed Error (a build that failed: category invalid_input or policy, the
// compiler log in the message).
//
//   std::string frame = encode_compile_request(request);
//   Expected<CompileRequest> back = decode_compile_request(frame);
//
// Decoding never trusts its input: truncated, garbage, oversized, another message type
// ("wire.wrong_type") or a newer format version ("wire.version") give an Error of category
// invalid_input, never an exception. Enum values from a newer peer decode to kUnknown.
// Texts, lists and data must each hold fewer than 2^29 elements (a Cap'n Proto limit).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"

namespace cuda_agent {

/// Which libraries a solution may call (manifest [compile] library_policy).
enum class LibraryPolicy : std::uint8_t {
  kUnknown = 0,  ///< unset, or a policy newer than this build: a compile worker refuses it
  kDefault = 1,  ///< cuBLAS (GEMM) and cuDNN (convolution) allowed, as CUDA Agent did
  kPure = 2,     ///< nothing beyond the CUDA runtime
};

/// "default" or "pure" (the manifest's spelling), "unknown" for kUnknown.
std::string_view to_string(LibraryPolicy policy);
/// The policy a manifest or command line names; anything but "default" or "pure" is refused
/// ("compile.library_policy", naming the value).
Expected<LibraryPolicy> parse_library_policy(std::string_view name);

/// One file of the agent's workspace.
struct SourceFile {
  std::string path;     ///< relative to the workspace root: "kernels/x.cu", "model_new.py"
  std::string content;  ///< the file's bytes
};

/// Check and build one solution.
struct CompileRequest {
  RequestHeader header;           ///< request id, run id, policy version, deadline
  std::vector<SourceFile> files;  ///< the workspace, except the read-only model.py
  std::string target_arch;        ///< nvcc -arch value: "sm_90", "sm_90a", ...
  LibraryPolicy library_policy = LibraryPolicy::kDefault;  ///< which libraries it may link
  std::vector<std::string> extra_flags;  ///< extra nvcc arguments the run allows, one each
};

/// How a launcher parameter is passed from model_new.py (DESIGN.md section 4).
enum class ParamKind : std::uint8_t {
  kUnknown = 0,   ///< not classified, or a kind newer than this build
  kPointer = 1,   ///< takes a CUDA tensor whose dtype matches the pointee
  kInteger = 2,   ///< takes a Python int
  kFloating = 3,  ///< takes a Python float
  kStream = 4,    ///< the trailing cudaStream_t, filled by the harness
};
/// "pointer", "integer", "floating", "stream" or "unknown" (the harness request's spelling).
std::string_view to_string(ParamKind kind);

/// One parameter of an extern "C" launcher.
struct LauncherParam {
  std::string name;    ///< as written; may be empty
  std::string c_type;  ///< C type as written, whitespace normalised: "const float*"
  ParamKind kind = ParamKind::kUnknown;  ///< how model_new.py passes it
};

/// One extern "C" launcher the artifact exports.
struct LauncherPrototype {
  std::string name;                   ///< exported symbol: "scale_relu_launch"
  std::vector<LauncherParam> params;  ///< in order
};

/// What ptxas reported for one kernel (-Xptxas -v).
struct KernelResources {
  std::string mangled_name;             ///< entry symbol as ptxas names it
  std::string demangled_name;           ///< c++filt form
  std::uint32_t registers = 0;          ///< per thread
  std::uint32_t static_smem_bytes = 0;  ///< static shared memory per block
  std::uint32_t stack_bytes = 0;        ///< stack frame per thread
  std::uint32_t spill_store_bytes = 0;  ///< spilled to local memory by stores, per thread
  std::uint32_t spill_load_bytes = 0;   ///< reloaded from local memory, per thread
};

/// Wall-clock time the compiler spent on one file.
struct FileTiming {
  std::string path;    ///< as in SourceFile::path
  double seconds = 0;  ///< wall-clock seconds of the compiler process for this file
};

/// A successful build.
struct CompileResult {
  std::string artifact_hash;                  ///< lower-case hex content hash of the artifact
  std::uint64_t artifact_size_bytes = 0;      ///< size of the built shared object
  std::vector<LauncherPrototype> prototypes;  ///< extern "C" launchers, in declaration order
  std::vector<KernelResources> kernels;       ///< one per compiled __global__ function
  std::vector<std::string> warnings;          ///< compiler and static-check warnings
  std::string log;                            ///< compiler output, trimmed
  std::vector<FileTiming> file_timings;       ///< one per compiled file
  double total_seconds = 0;                   ///< whole job, link included
  bool cache_hit = false;                     ///< served from the artifact cache
  std::string artifact;   ///< the shared object's bytes (artifact_size_bytes long)
  std::string toolchain;  ///< nvcc and host compiler versions, one line each
  std::string sandboxed;  ///< how the compiler processes were confined
};

/// Answer to a CompileRequest.
struct CompileReply {
  RequestId request_id;  ///< the request this answers
  /// The build, or why there is none.
  Expected<CompileResult> outcome{CompileResult{}};
};

std::string encode_compile_request(const CompileRequest& request);
Expected<CompileRequest> decode_compile_request(std::string_view bytes,
                                                const DecodeLimits& limits = {});

std::string encode_compile_reply(const CompileReply& reply);
Expected<CompileReply> decode_compile_reply(std::string_view bytes,
                                            const DecodeLimits& limits = {});

}  // namespace cuda_agent
