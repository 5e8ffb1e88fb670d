#include "gpu_bench/bench_client.h"

namespace cuda_agent {

std::string BenchPoolProtocol::encode(const BenchRequest& request) {
  return encode_bench_request(request);
}

Expected<BenchResult> BenchPoolProtocol::decode(std::string_view reply) {
  ASSIGN_OR_RETURN(BenchReply decoded, decode_bench_reply(reply));
  return std::move(decoded.outcome);
}

}  // namespace cuda_agent
