// The c10d adapter behind LearnerGroup: stores, the Gloo / NCCL backends, buckets, deadlines. The
// only file that sees c10d types, and the one place that turns their exceptions into Errors.
//
// Builds against Debian's libtorch 1.13 (backends derive from c10d::ProcessGroup) and PyTorch 2.x
// (they derive from c10d::Backend). CMake sets CA_LEARNER_HAS_GLOO / CA_LEARNER_HAS_NCCL when the
// headers were found (cmake/Dependencies.cmake, "c10d backends").
#include "learner/learner_group.h"

#include <ATen/ATen.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if CA_LEARNER_HAS_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if CA_LEARNER_HAS_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <utility>

namespace cuda_agent {
namespace {

#if TORCH_VERSION_MAJOR >= 2
using C10dBackend = c10d::Backend;  // 2.x: ProcessGroupGloo / ProcessGroupNCCL are Backends
#else
using C10dBackend = c10d::ProcessGroup;  // 1.13: they are ProcessGroups
#endif
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
// ProcessGroupNCCL::abort() / shutdown() are public from PyTorch 2.2 on; before, only its
// destructor aborts the communicators (dropping the backend still does that).
#define CA_TORCH_NCCL_HAS_ABORT \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2))

constexpr const char* kJoinKeyPrefix = "cuda_agent/learner_group/joined/";
// Collectives in flight at once: enough to overlap one bucket's copies with the next one's
// transfer, few enough that tearing a Gloo backend down never waits behind a long queue.
constexpr std::size_t kMaxInFlight = 2;

long long ms_of(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

// The text of a foreign exception, without c10's backtrace.
std::string describe(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

bool mentions_timeout(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find("timed out") != std::string::npos || text.find("timeout") != std::string::npos ||
         text.find("time out") != std::string::npos;
}

Error invalid(std::string message) {
  return make_error(ErrorCategory::kInvalidInput, "learner.bad_group_options", std::move(message));
}

struct Rendezvous {
  bool tcp = false;
  std::string path;  // file:
  std::string host;  // tcp://
  std::uint16_t port = 0;
};

Expected<Rendezvous> parse_rendezvous(const std::string& text) {
  Rendezvous r;
  if (text.rfind("file:", 0) == 0 && text.size() > 5) {
    r.path = text.substr(5);
    return r;
  }
  if (text.rfind("tcp://", 0) == 0) {
    const std::string rest = text.substr(6);
    const auto colon = rest.rfind(':');
    if (colon != std::string::npos && colon > 0) {
      r.tcp = true;
      r.host = rest.substr(0, colon);
      if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']')
        r.host = r.host.substr(1, r.host.size() - 2);  // [::1]
      char* end = nullptr;
      const long port = std::strtol(rest.c_str() + colon + 1, &end, 10);
      if (end && *end == '\0' && port > 0 && port < 65536) {
        r.port = static_cast<std::uint16_t>(port);
        return r;
      }
    }
  }
  return invalid("rendezvous '" + text +
                 "' is neither \"file:/path\" nor \"tcp://host:port\" (port 1..65535)");
}

}  // namespace

struct LearnerGroup::Impl {
  LearnerGroupOptions options;
  std::string backend_name = "local";
  at::Device device{at::kCPU};
  bool nccl = false;
  bool broken = false;
  // Declared before the backend so that the backend, which uses it, is destroyed first.
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<C10dBackend> backend;

  bool local() const { return options.world_size == 1; }

  std::string where() const {
    return "rank " + std::to_string(options.rank) + " of " + std::to_string(options.world_size) +
           " (" + backend_name + ", deadline " + std::to_string(options.timeout.count()) + " ms)";
  }

  Status usable(const char* op) const {
    if (!broken) return Status::ok();
    return make_error(ErrorCategory::kUnavailable, "learner.group_broken",
                      std::string(op) + " on " + where() +
                          ": the group is broken by an earlier failed collective; destroy it and "
                          "create a new one");
  }

  Status check_tensor(const at::Tensor& t, const char* op, std::size_t index) const {
    std::string what;
    if (!t.defined())
      what = "is undefined";
    else if (nccl ? !(t.is_cuda() && t.get_device() == device.index()) : !t.device().is_cpu())
      what = "is on " + t.device().str() + ", the group's device is " + device.str();
    if (what.empty()) return Status::ok();
    return make_error(ErrorCategory::kInvalidInput, "learner.bad_tensor",
                      std::string(op) + ": tensor " + std::to_string(index) + " " + what);
  }

  // Marks the group broken and tears the backend down so that nothing waits on it any more.
  void tear_down() {
    broken = true;
    if (!backend) return;
#if CA_LEARNER_HAS_NCCL && CA_TORCH_NCCL_HAS_ABORT
    if (nccl) {
      try {
        static_cast<c10d::ProcessGroupNCCL*>(backend.get())->abort();  // ncclCommAbort
      } catch (...) {
      }
    }
#endif
    // Gloo: the destructor joins the worker threads; one still inside a collective leaves it when
    // gloo's own timeout (the same deadline, set at construction) fires.
    backend.reset();
  }

  Error collective_error(const std::string& op, bool timed_out, const std::string& cause) {
    tear_down();
    if (timed_out)
      return make_error(ErrorCategory::kTimeout, "learner.collective_timeout",
                        op + " on " + where() + " missed its deadline" +
                            (cause.empty() ? "" : ": " + cause) +
                            "; the group is broken: destroy it and create a new one");
    return make_error(ErrorCategory::kUnavailable, "learner.collective_failed",
                      op + " on " + where() + " failed: " + cause +
                          "; the group is broken: destroy it and create a new one");
  }

  // Issues one collective; a throw here (a peer already gone, a backend check) breaks the group.
  Expected<c10::intrusive_ptr<c10d::Work>> issue(
      const std::string& op, const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
    try {
      return start();
    } catch (const std::exception& e) {
      const std::string cause = describe(e);
      return collective_error(op, mentions_timeout(cause), cause);
    } catch (...) {
      return collective_error(op, false, "unknown exception");
    }
  }

  // Waits for one collective until `deadline`.
  Status wait(const std::string& op, c10d::Work& work, Clock::time_point deadline) {
    try {
      if (nccl) {
        // NCCL's wait() does not block the host (unless TORCH_NCCL_BLOCKING_WAIT is set): it only
        // orders the current stream after the collective. Poll completion against the deadline,
        // then wait() to order the stream and to rethrow an error the collective ended with.
        auto pause = std::chrono::microseconds(10);
        while (!work.isCompleted()) {
          if (Clock::now() >= deadline) return collective_error(op, true, "");
          std::this_thread::sleep_for(pause);
          pause = std::min(pause * 2, std::chrono::microseconds(1000));
        }
        work.wait();
      } else {
        // 0 ms would mean "no timeout" to c10d.
        const auto left = std::max<long long>(1, ms_of(deadline - Clock::now()));
        work.wait(milliseconds(left));
      }
      return Status::ok();
    } catch (const std::exception& e) {
      const std::string cause = describe(e);
      return collective_error(op, Clock::now() >= deadline || mentions_timeout(cause), cause);
    } catch (...) {
      return collective_error(op, Clock::now() >= deadline, "unknown exception");
    }
  }

  // One collective, issued and waited for with the full deadline.
  Status run_one(const std::string& op,
                 const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
    const auto deadline = Clock::now() + options.timeout;
    auto work = issue(op, start);
    if (!work) return work.error();
    return wait(op, **work, deadline);
  }

  // A flattened bucket: `flat` is either a tensor of the caller's (in place) or a temporary
  // holding the tensors `members` back to back.
  struct Bucket {
    std::vector<std::size_t> members;
    at::Tensor flat;
    bool in_place = false;
  };

  // Groups tensors by dtype (in order of first appearance) and cuts each group into buckets of
  // at most bucket_bytes; a tensor at least that big goes alone.
  std::vector<Bucket> make_buckets(const std::vector<at::Tensor>& tensors) const {
    std::vector<at::ScalarType> order;
    for (const auto& t : tensors)
      if (t.numel() > 0 && std::find(order.begin(), order.end(), t.scalar_type()) == order.end())
        order.push_back(t.scalar_type());
    std::vector<Bucket> buckets;
    const std::size_t cap = std::max<std::size_t>(1, options.bucket_bytes);
    for (const auto type : order) {
      Bucket open;
      std::size_t open_bytes = 0;
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        const auto& t = tensors[i];
        if (t.numel() == 0 || t.scalar_type() != type) continue;
        const auto bytes = static_cast<std::size_t>(t.numel()) * t.element_size();
        if (bytes >= cap) {
          buckets.push_back(Bucket{{i}, {}, false});
          continue;
        }
        if (open_bytes + bytes > cap && !open.members.empty()) {
          buckets.push_back(std::move(open));
          open = Bucket{};
          open_bytes = 0;
        }
        open.members.push_back(i);
        open_bytes += bytes;
      }
      if (!open.members.empty()) buckets.push_back(std::move(open));
    }
    return buckets;
  }

  // Runs `start(flat)` over every bucket, at most kMaxInFlight at a time. copy_in / copy_out say
  // whether this rank's values go into the bucket and whether results come back out of it.
  Status run_buckets(const std::string& op, std::vector<at::Tensor>& tensors, bool copy_in,
                     bool copy_out,
                     const std::function<c10::intrusive_ptr<c10d::Work>(at::Tensor&)>& start) {
    auto buckets = make_buckets(tensors);
    struct InFlight {
      std::size_t bucket;
      c10::intrusive_ptr<c10d::Work> work;
      Clock::time_point issued;
    };
    std::deque<InFlight> in_flight;
    Clock::time_point last_done = Clock::now();
    const auto name = [&](std::size_t b) {
      return op + " (bucket " + std::to_string(b + 1) + " of " + std::to_string(buckets.size()) +
             ", " + std::to_string(buckets[b].flat.numel()) + " " +
             std::string(c10::toString(buckets[b].flat.scalar_type())) + " elements)";
    };
    auto finish_oldest = [&]() -> Status {
      InFlight f = std::move(in_flight.front());
      in_flight.pop_front();
      // Each collective gets the full deadline from the moment it could start: its issue, or
      // the end of the one before it.
      const auto deadline = std::max(f.issued, last_done) + options.timeout;
      RETURN_IF_ERROR(wait(name(f.bucket), *f.work, deadline));
      last_done = Clock::now();
      Bucket& b = buckets[f.bucket];
      if (copy_out && !b.in_place) {
        std::int64_t offset = 0;
        for (const auto i : b.members) {
          auto& t = tensors[i];
          t.copy_(b.flat.narrow(0, offset, t.numel()).view(t.sizes()));
          offset += t.numel();
        }
      }
      b.flat = at::Tensor();  // free the temporary
      return Status::ok();
    };
    for (std::size_t bi = 0; bi < buckets.size(); ++bi) {
      if (in_flight.size() >= kMaxInFlight) RETURN_IF_ERROR(finish_oldest());
      Bucket& b = buckets[bi];
      const auto& first = tensors[b.members.front()];
      if (b.members.size() == 1 && first.is_contiguous()) {
        b.flat = first;
        b.in_place = true;
      } else {
        std::int64_t total = 0;
        for (const auto i : b.members) total += tensors[i].numel();
        b.flat = at::empty({total}, first.options());
        if (copy_in) {
          std::int64_t offset = 0;
          for (const auto i : b.members) {
            const auto& t = tensors[i];
            b.flat.narrow(0, offset, t.numel()).view(t.sizes()).copy_(t);
            offset += t.numel();
          }
        }
      }
      const auto issued = Clock::now();
      auto work = issue(name(bi), [&] { return start(b.flat); });
      if (!work) return work.error();
      in_flight.push_back(InFlight{bi, std::move(*work), issued});
    }
    while (!in_flight.empty()) RETURN_IF_ERROR(finish_oldest());
    return Status::ok();
  }

  Status allreduce_one(const char* op, at::Tensor& t) {
    return run_one(op, [&] {
      std::vector<at::Tensor> v{t};
      c10d::AllreduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      o.timeout = options.timeout;
      return backend->allreduce(v, o);
    });
  }

  // The join barrier: every rank sets its key and polls for all of them. The first rank to reach
  // its deadline publishes why it gave up (which ranks are missing) and waits briefly for the
  // ranks that did join to read it, so that they too report a rendezvous timeout naming the
  // missing ranks rather than a store connection reset by a host that went away.
  Status join(Clock::time_point deadline) {
    const auto key = [](const std::string& what) { return kJoinKeyPrefix + what; };
    std::vector<std::string> keys;
    for (int r = 0; r < options.world_size; ++r) keys.push_back(key(std::to_string(r)));
    const auto timeout_error = [&](const std::string& why) {
      return make_error(ErrorCategory::kTimeout, "learner.rendezvous_timeout",
                        where() + ": not every rank joined '" + options.rendezvous +
                            "' within the deadline: " + why);
    };
    try {
      store->set(keys[options.rank], std::vector<std::uint8_t>{1});
      auto pause = milliseconds(1);
      for (;;) {
        if (store->check(keys)) return Status::ok();
        if (store->check({key("failed")})) {
          const auto why = store->get(key("failed"));
          store->set(key("ack/" + std::to_string(options.rank)), std::vector<std::uint8_t>{1});
          return timeout_error(std::string(why.begin(), why.end()));
        }
        if (Clock::now() >= deadline) break;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, milliseconds(20));
      }
      std::string missing;
      std::vector<std::string> acks;
      for (int r = 0; r < options.world_size; ++r) {
        if (!store->check({keys[r]}))
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        else if (r != options.rank)
          acks.push_back(key("ack/" + std::to_string(r)));
      }
      const std::string why = "rank " + std::to_string(options.rank) +
                              " stopped waiting at its deadline (missing ranks: " + missing + ")";
      store->set(key("failed"), std::vector<std::uint8_t>(why.begin(), why.end()));
      try {
        if (!acks.empty()) store->wait(acks, std::min(options.timeout, milliseconds(1000)));
      } catch (const std::exception&) {  // a rank that did not read it reports its own timeout
      }
      return timeout_error(why);
    } catch (const std::exception& e) {
      const std::string cause = describe(e);
      if (Clock::now() >= deadline || mentions_timeout(cause)) return timeout_error(cause);
      return make_error(ErrorCategory::kUnavailable, "learner.rendezvous_failed",
                        where() + ": rendezvous at '" + options.rendezvous + "' failed: " + cause);
    }
  }

  Status connect_store(const Rendezvous& r) {
    try {
      if (!r.tcp) {
        store = c10::make_intrusive<c10d::FileStore>(r.path, options.world_size);
        store->setTimeout(options.timeout);
        return Status::ok();
      }
      c10d::TCPStoreOptions o;
      o.port = r.port;
      o.isServer = options.rank == 0;
      o.numWorkers = static_cast<std::size_t>(options.world_size);
      o.waitWorkers = false;  // join() waits, with a message naming who is missing
      o.timeout = options.timeout;
      store = c10::make_intrusive<c10d::TCPStore>(r.host, o);
      return Status::ok();
    } catch (const std::exception& e) {
      const std::string cause = describe(e);
      const std::string what = options.rank == 0 && r.tcp
                                   ? "could not host the store on port " + std::to_string(r.port)
                                   : "could not open the store '" + options.rendezvous + "'";
      if (mentions_timeout(cause))
        return make_error(ErrorCategory::kTimeout, "learner.rendezvous_timeout",
                          where() + ": " + what + " within the deadline: " + cause);
      return make_error(ErrorCategory::kUnavailable, "learner.rendezvous_failed",
                        where() + ": " + what + ": " + cause);
    }
  }

  Status make_backend(const Rendezvous& r) {
    try {
      if (options.cuda_device) {
#if CA_LEARNER_HAS_NCCL
        c10::cuda::set_device(static_cast<c10::DeviceIndex>(*options.cuda_device));
        // On a timeout or NCCL error the watchdog aborts the communicators and lets the process
        // live (2 = CleanUpOnly), so that this class reports the error; 2.x's default (3) kills the
        // process. An operator's own setting wins.
        setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", /*overwrite=*/0);
        auto o = c10d::ProcessGroupNCCL::Options::create();
        o->timeout = options.timeout;
        backend =
            c10::make_intrusive<c10d::ProcessGroupNCCL>(store, options.rank, options.world_size, o);
#endif
      } else {
#if CA_LEARNER_HAS_GLOO
        auto o = c10d::ProcessGroupGloo::Options::create(options.timeout);
        const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
        const bool loopback =
            r.tcp && (r.host == "127.0.0.1" || r.host == "localhost" || r.host == "::1");
        if (ifname && *ifname)
          o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
        else if (loopback)
          o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        else
          o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        o->threads = static_cast<int>(kMaxInFlight);
        backend =
            c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank, options.world_size, o);
#endif
      }
      return Status::ok();
    } catch (const std::exception& e) {
      const std::string cause = describe(e);
      return make_error(
          mentions_timeout(cause) ? ErrorCategory::kTimeout : ErrorCategory::kUnavailable,
          mentions_timeout(cause) ? "learner.rendezvous_timeout" : "learner.rendezvous_failed",
          where() + ": could not connect the " + backend_name + " backend: " + cause);
    }
  }
};

bool LearnerGroup::gloo_compiled_in() { return CA_LEARNER_HAS_GLOO; }
bool LearnerGroup::nccl_compiled_in() { return CA_LEARNER_HAS_NCCL; }

Expected<std::unique_ptr<LearnerGroup>> LearnerGroup::create(const LearnerGroupOptions& options) {
  const auto start = Clock::now();
  if (options.world_size < 1)
    return invalid("world_size is " + std::to_string(options.world_size) + ", must be >= 1");
  if (options.rank < 0 || options.rank >= options.world_size)
    return invalid("rank " + std::to_string(options.rank) + " is outside 0.." +
                   std::to_string(options.world_size - 1));
  if (options.timeout.count() <= 0)
    return invalid("timeout must be positive, is " + std::to_string(options.timeout.count()) +
                   " ms");
  if (options.cuda_device && *options.cuda_device < 0)
    return invalid("cuda_device is " + std::to_string(*options.cuda_device));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.cuda_device) {
    impl->nccl = true;
    impl->device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(*options.cuda_device));
  }
  if (options.world_size == 1)
    return std::unique_ptr<LearnerGroup>(new LearnerGroup(std::move(impl)));

  impl->backend_name = impl->nccl ? "nccl" : "gloo";
  if (impl->nccl ? !CA_LEARNER_HAS_NCCL : !CA_LEARNER_HAS_GLOO)
    return make_error(ErrorCategory::kUnavailable, "learner.backend_unavailable",
                      impl->nccl ? "cuda_device is set but this build has no NCCL backend (the "
                                   "learner was built without CUDA libtorch or without nccl.h)"
                                 : "cuda_device is unset but this build has no Gloo backend (the "
                                   "learner was built without gloo headers; install libgloo-dev "
                                   "or use a libtorch that ships them)");
  ASSIGN_OR_RETURN(const Rendezvous r, parse_rendezvous(options.rendezvous));
  try {
    const auto deadline = start + options.timeout;
    RETURN_IF_ERROR(impl->connect_store(r));
    RETURN_IF_ERROR(impl->join(deadline));
    RETURN_IF_ERROR(impl->make_backend(r));
    // One small collective: the group works (NCCL builds its communicator here).
    auto probe = at::ones({1}, at::TensorOptions().dtype(at::kFloat).device(impl->device));
    Status first = impl->allreduce_one("create: first all-reduce", probe);
    if (!first) return first.error();
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.unexpected_exception",
                      impl->where() + ": create: " + describe(e));
  }
  return std::unique_ptr<LearnerGroup>(new LearnerGroup(std::move(impl)));
}

LearnerGroup::LearnerGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LearnerGroup::~LearnerGroup() {
  if (!impl_) return;
  try {
#if CA_LEARNER_HAS_NCCL && CA_TORCH_NCCL_HAS_ABORT
    // A clean end: without it ProcessGroupNCCL's destructor warns and may abort.
    if (impl_->nccl && impl_->backend)
      static_cast<c10d::ProcessGroupNCCL*>(impl_->backend.get())->shutdown();
#endif
    impl_->backend.reset();
    impl_->store.reset();
  } catch (...) {
  }
}

int LearnerGroup::rank() const { return impl_->options.rank; }
int LearnerGroup::world_size() const { return impl_->options.world_size; }
bool LearnerGroup::broken() const { return impl_->broken; }

Status LearnerGroup::allreduce_sum(std::vector<at::Tensor>& tensors) {
  if (impl_->local()) return Status::ok();
  RETURN_IF_ERROR(impl_->usable("allreduce_sum"));
  for (std::size_t i = 0; i < tensors.size(); ++i)
    RETURN_IF_ERROR(impl_->check_tensor(tensors[i], "allreduce_sum", i));
  try {
    return impl_->run_buckets("allreduce_sum", tensors, true, true, [&](at::Tensor& flat) {
      std::vector<at::Tensor> v{flat};
      c10d::AllreduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      o.timeout = impl_->options.timeout;
      return impl_->backend->allreduce(v, o);
    });
  } catch (const std::exception& e) {  // a copy in or out (out of memory)
    return make_error(ErrorCategory::kInternal, "learner.unexpected_exception",
                      "allreduce_sum on " + impl_->where() + ": " + describe(e));
  }
}

Status LearnerGroup::allreduce_sum(std::vector<double>& values) {
  if (impl_->local() || values.empty()) return Status::ok();
  RETURN_IF_ERROR(impl_->usable("allreduce_sum(scalars)"));
  try {
    const auto n = static_cast<std::int64_t>(values.size());
    // CPU: reduce the caller's vector in place; CUDA: through a device copy.
    at::Tensor host = at::from_blob(values.data(), {n}, at::TensorOptions().dtype(at::kDouble));
    at::Tensor t = impl_->nccl ? host.to(impl_->device) : host;
    RETURN_IF_ERROR(impl_->allreduce_one("allreduce_sum(scalars)", t));
    if (impl_->nccl) host.copy_(t);
    return Status::ok();
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.unexpected_exception",
                      "allreduce_sum(scalars) on " + impl_->where() + ": " + describe(e));
  }
}

Status LearnerGroup::broadcast(std::vector<at::Tensor>& tensors, int root) {
  if (root < 0 || root >= impl_->options.world_size)
    return make_error(ErrorCategory::kInvalidInput, "learner.bad_tensor",
                      "broadcast: root " + std::to_string(root) + " is outside 0.." +
                          std::to_string(impl_->options.world_size - 1));
  if (impl_->local()) return Status::ok();
  RETURN_IF_ERROR(impl_->usable("broadcast"));
  for (std::size_t i = 0; i < tensors.size(); ++i)
    RETURN_IF_ERROR(impl_->check_tensor(tensors[i], "broadcast", i));
  const bool is_root = impl_->options.rank == root;
  try {
    return impl_->run_buckets("broadcast from rank " + std::to_string(root), tensors, is_root,
                              !is_root, [&](at::Tensor& flat) {
                                std::vector<at::Tensor> v{flat};
                                c10d::BroadcastOptions o;
                                o.rootRank = root;
                                o.rootTensor = 0;
                                o.timeout = impl_->options.timeout;
                                return impl_->backend->broadcast(v, o);
                              });
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.unexpected_exception",
                      "broadcast on " + impl_->where() + ": " + describe(e));
  }
}

Status LearnerGroup::all_gather_into(const at::Tensor& shard, at::Tensor& full) {
  RETURN_IF_ERROR(impl_->check_tensor(shard, "all_gather_into", 0));
  RETURN_IF_ERROR(impl_->check_tensor(full, "all_gather_into", 1));
  const auto ws = impl_->options.world_size;
  const std::int64_t n = shard.numel();
  if (full.scalar_type() != shard.scalar_type() || !full.is_contiguous() || full.numel() != n * ws)
    return make_error(ErrorCategory::kInvalidInput, "learner.bad_tensor",
                      "all_gather_into: full must be contiguous, of the shard's dtype and of " +
                          std::to_string(n) + " x " + std::to_string(ws) + " elements; it has " +
                          std::to_string(full.numel()) + (full.is_contiguous() ? "" : ", strided"));
  try {
    at::Tensor flat = full.view({-1});
    if (impl_->local()) {
      if (n > 0 && !flat.is_same(shard)) flat.copy_(shard.reshape({-1}));
      return Status::ok();
    }
    RETURN_IF_ERROR(impl_->usable("all_gather_into"));
    if (n == 0) return Status::ok();
    at::Tensor input = shard.contiguous().view({-1});
    return impl_->run_one("all_gather_into", [&]() -> c10::intrusive_ptr<c10d::Work> {
      c10d::AllgatherOptions o;
      o.timeout = impl_->options.timeout;
      if (impl_->nccl) return impl_->backend->_allgather_base(flat, input, o);
      // Gloo in 1.13 has no _allgather_base: gather into views of `full`, rank by rank.
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int r = 0; r < ws; ++r) outputs[0].push_back(flat.narrow(0, r * n, n));
      std::vector<at::Tensor> inputs{input};
      return impl_->backend->allgather(outputs, inputs, o);
    });
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.unexpected_exception",
                      "all_gather_into on " + impl_->where() + ": " + describe(e));
  }
}

Status LearnerGroup::barrier() {
  if (impl_->local()) return Status::ok();
  RETURN_IF_ERROR(impl_->usable("barrier"));
  try {
    auto t = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(impl_->device));
    return impl_->allreduce_one("barrier", t);
  } catch (const std::exception& e) {
    return make_error(ErrorCategory::kInternal, "learner.unexpected_exception",
                      "barrier on " + impl_->where() + ": " + describe(e));
  }
}

}  // namespace cuda_agent
