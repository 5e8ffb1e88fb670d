#include "actors/pool_gateway.h"

#include <caf/all.hpp>

#include <deque>
#include <unordered_map>

#include "actors/actor_runtime.h"

namespace cuda_agent {
namespace {

/// The PoolClient's io thread tells the gateway that a request finished.
using pool_done_atom = caf::atom_constant<caf::atom("pooldone")>;

struct GatewayState {
  std::unique_ptr<PoolClient> client;
  std::unordered_map<std::uint64_t, caf::response_promise> promises;
  std::uint64_t next_token = 0;
  static inline const char* name = "pool_gateway";
};

caf::behavior pool_gateway(caf::stateful_actor<GatewayState>* self,
                           std::shared_ptr<std::unique_ptr<PoolClient>> client) {
  self->state.client = std::move(*client);
  return {
      [=](pool_call_atom, PoolRequest& request) -> caf::response_promise {
        auto promise = self->make_response_promise();
        const std::uint64_t token = ++self->state.next_token;
        self->state.promises.emplace(token, promise);
        // Weak: the client (owned by this actor's state) must not keep the actor alive.
        auto weak = caf::actor_cast<caf::weak_actor_ptr>(caf::actor_cast<caf::actor>(self));
        self->state.client->call_async(std::move(request), [weak, token](PoolOutcome outcome) {
          if (auto gateway = caf::actor_cast<caf::actor>(weak)) {
            caf::anon_send(gateway, pool_done_atom::value, token, std::move(outcome));
          }
        });
        return promise;
      },
      [=](pool_done_atom, std::uint64_t token, PoolOutcome& outcome) {
        auto it = self->state.promises.find(token);
        if (it == self->state.promises.end()) return;
        it->second.deliver(std::move(outcome));
        self->state.promises.erase(it);
      },
  };
}

struct LocalState {
  std::unordered_map<std::string, PoolOutcome> cache;
  std::deque<std::string> order;
  static inline const char* name = "local_pool_channel";
};

Error deadline_error(const std::string& id, const char* when) {
  return make_error(ErrorCategory::kTimeout, "pool.deadline_expired",
                    "request " + id + " passed its deadline " + when);
}

pool_channel::behavior_type local_pool_channel(pool_channel::stateful_pointer<LocalState> self,
                                               PoolHandler handler,
                                               LocalPoolChannelOptions options) {
  return {
      [=](pool_call_atom, PoolRequest& request) -> PoolOutcome {
        const std::string id = request.header.request_id.value();
        if (id.empty() || request.header.deadline_unix_ms <= 0) {
          return PoolOutcome{request.header.request_id,
                             make_error(ErrorCategory::kInvalidInput, "pool.bad_request",
                                        "a request needs a request id and a deadline"),
                             0, WorkerId{}};
        }
        auto& state = self->state;
        if (auto hit = state.cache.find(id); hit != state.cache.end()) return hit->second;
        if (now_unix_ms() >= request.header.deadline_unix_ms) {
          return PoolOutcome{request.header.request_id, deadline_error(id, "before it ran"), 0,
                             WorkerId{}};
        }
        WorkItem item{request.header, std::move(request.payload), 1};
        PoolOutcome outcome{request.header.request_id, Error{}, 1, options.worker_id};
        try {
          Expected<PoolBytes> result = handler(item);
          if (result) {
            outcome.result = std::move(*result).take();
          } else {
            outcome.result = result.error();
          }
        } catch (const std::exception& e) {
          outcome.result = make_error(ErrorCategory::kInternal, "pool.handler_threw", e.what());
        }
        if (now_unix_ms() >= request.header.deadline_unix_ms) {
          return PoolOutcome{request.header.request_id, deadline_error(id, "while it ran"), 1,
                             WorkerId{}};
        }
        if (options.result_cache_entries > 0) {
          state.cache.emplace(id, outcome);
          state.order.push_back(id);
          if (state.order.size() > static_cast<std::size_t>(options.result_cache_entries)) {
            state.cache.erase(state.order.front());
            state.order.pop_front();
          }
        }
        return outcome;
      },
  };
}

}  // namespace

Expected<pool_channel> spawn_pool_gateway(caf::actor_system& system,
                                          const PoolClientOptions& options) {
  auto client = PoolClient::connect(options);
  if (!client) return client.error();
  // CAF copies spawn arguments; the shared_ptr carries the move-only client in.
  auto holder = std::make_shared<std::unique_ptr<PoolClient>>(std::move(*client));
  return caf::actor_cast<pool_channel>(system.spawn(pool_gateway, holder));
}

pool_channel spawn_local_pool_channel(caf::actor_system& system, PoolHandler handler,
                                      const LocalPoolChannelOptions& options) {
  return system.spawn<caf::detached>(local_pool_channel, std::move(handler), options);
}

std::chrono::milliseconds pool_request_timeout(const PoolRequest& request) {
  return std::chrono::milliseconds(
      std::max<std::int64_t>(request.header.deadline_unix_ms - now_unix_ms(), 0) + 250);
}

Error pool_error_from_caf(caf::actor_system& system, const caf::error& error,
                          const RequestId& request_id) {
  Error e = from_caf_error(system, error);
  if (e.code != "actor.request_timeout") return e;
  return deadline_error(request_id.value(), "with no answer from the pool");
}

PoolOutcome call_pool_channel(caf::actor_system& system, const pool_channel& channel,
                              PoolRequest request) {
  caf::scoped_actor self{system};
  PoolOutcome out{request.header.request_id, Error{}, 0, WorkerId{}};
  const auto timeout = pool_request_timeout(request);
  const RequestId id = request.header.request_id;
  self->request(channel, timeout, pool_call_atom::value, std::move(request))
      .receive([&](PoolOutcome& outcome) { out = std::move(outcome); },
               [&](caf::error& e) { out.result = pool_error_from_caf(system, e, id); });
  return out;
}

}  // namespace cuda_agent
