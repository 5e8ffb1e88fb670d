#include "compile_farm/compile_client.h"

namespace cuda_agent {

std::string CompilePoolProtocol::encode(const CompileRequest& request) {
  return encode_compile_request(request);
}

Expected<CompileResult> CompilePoolProtocol::decode(std::string_view reply) {
  ASSIGN_OR_RETURN(CompileReply decoded, decode_compile_reply(reply));
  return std::move(decoded.outcome);
}

}  // namespace cuda_agent
