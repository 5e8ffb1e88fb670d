// Errors and results. Every fallible function returns `Expected<T>` (or `Status`); no exception
// crosses an actor or process boundary. Foreign errors (rocksdb::Status, c10::Error, CUDA, ZeroMQ
// errno, toml++ parse errors) are translated into an `Error` once, in the adapter that calls them.
//
//   Expected<Manifest> m = load_manifest(path);
//   if (!m) { log_error(m.error()); return 2; }
//
// The wire form of `Error` is messages/common.capnp; its category names are stable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace cuda_agent {

/// What kind of failure it was; decides how a caller reacts (retry, report, give up).
enum class ErrorCategory : std::uint8_t {
  kInvalidInput,  ///< the caller's input is wrong (bad manifest, bad solution); do not retry
  kNotFound,      ///< a named thing does not exist (file, key, task, worker)
  kIo,            ///< the filesystem or a device failed
  kTimeout,       ///< a deadline passed
  kUnavailable,   ///< a peer or resource is gone or busy; retrying later may succeed
  kPolicy,        ///< a solution broke a rule of the evaluation protocol (DESIGN.md section 5)
  kInternal,      ///< a bug or an unexpected state of our own
};

/// Stable lower-case name of a category ("invalid_input", ...), used in logs and on the wire.
std::string_view to_string(ErrorCategory category);

/// A failure: category, a stable machine-readable `code` (snake_case, e.g. "manifest.unknown_key")
/// and a message for people that names what was wrong and where.
struct Error {
  ErrorCategory category = ErrorCategory::kInternal;
  std::string code;
  std::string message;

  /// "invalid_input/manifest.unknown_key: run.toml:3:1: unknown key 'nmae' in [run]"
  std::string to_string() const;
  /// A copy with `context + ": "` put in front of the message (keeps category and code).
  Error with_context(std::string_view context) const;
};

Error make_error(ErrorCategory category, std::string code, std::string message);

template <class T>
class Expected;

namespace detail {
template <class A, class B>
inline constexpr bool is_same_bare_v =
    std::is_same_v<std::remove_cv_t<std::remove_reference_t<A>>, B>;
template <class A>
inline constexpr bool is_expected_v = false;
template <class T>
inline constexpr bool is_expected_v<Expected<T>> = true;
}  // namespace detail

/// A value or an Error. Deliberately small: `has_value`, `operator bool`, `value`, `error`, `*`,
/// `->`. Accessing the wrong side is a programming error and aborts.
template <class T>
class [[nodiscard]] Expected {
 public:
  // SFINAE rather than `requires`: this header is also compiled by nvcc at C++17.
  template <class U = T, std::enable_if_t<!std::is_same_v<U, Error>, int> = 0>
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT
  /// The value constructor for every T, Expected<Error> included (a decoded wire error).
  Expected(std::in_place_t, T value) : v_(std::in_place_index<0>, std::move(value)) {}
  /// A value of a type that converts to T implicitly, as std::expected allows: an
  /// Expected<PoolBytes> from a std::string.
  template <class U, std::enable_if_t<
                         std::is_convertible_v<U&&, T> && !detail::is_same_bare_v<U, T> &&
                             !detail::is_same_bare_v<U, Error> &&
                             !detail::is_expected_v<std::remove_cv_t<std::remove_reference_t<U>>>,
                         int> = 0>
  Expected(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT: implicit
  /// An Expected whose value type converts to T implicitly: a handler returning
  /// Expected<std::string> where an Expected<PoolBytes> is wanted.
  template <class U, std::enable_if_t<!std::is_same_v<U, T> && std::is_convertible_v<U&&, T>,
                                      int> = 0>
  Expected(Expected<U>&& other)  // NOLINT: implicit
      : v_(other ? std::variant<T, Error>(std::in_place_index<0>, std::move(*other))
                 : std::variant<T, Error>(std::in_place_index<1>, other.error())) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

/// What `Status::ok()` returns: it becomes a successful Status and converts to nothing else. A
/// type of its own because `st.ok()` on a Status compiles (a static function called through an
/// instance) and would always say "ok": with this type `if (st.ok())` does not compile. Ask a
/// Status with `st.is_ok()` or `if (st)`.
struct [[nodiscard]] OkStatus {};

/// Success or an Error, for functions that return nothing.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(OkStatus) {}                                            // NOLINT: implicit by design
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  static OkStatus ok() { return {}; }

  bool is_ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace cuda_agent

/// Returns the error of a Status or Expected expression from the enclosing function.
#define RETURN_IF_ERROR(expr)                                        \
  do {                                                               \
    auto&& ca_status_ = (expr);                                      \
    if (!ca_status_) return ::cuda_agent::Error(ca_status_.error()); \
  } while (0)

#define CA_CONCAT_INNER_(a, b) a##b
#define CA_CONCAT_(a, b) CA_CONCAT_INNER_(a, b)
/// `ASSIGN_OR_RETURN(auto x, f());` declares x from an Expected or returns its error.
#define ASSIGN_OR_RETURN(decl, expr) \
  ASSIGN_OR_RETURN_IMPL_(CA_CONCAT_(ca_expected_, __LINE__), decl, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, decl, expr)      \
  auto tmp = (expr);                                 \
  if (!tmp) return ::cuda_agent::Error(tmp.error()); \
  decl = std::move(tmp).value()
