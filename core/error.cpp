#include "core/error.h"

namespace cuda_agent {

std::string_view to_string(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::kInvalidInput: return "invalid_input";
    case ErrorCategory::kNotFound: return "not_found";
    case ErrorCategory::kIo: return "io";
    case ErrorCategory::kTimeout: return "timeout";
    case ErrorCategory::kUnavailable: return "unavailable";
    case ErrorCategory::kPolicy: return "policy";
    case ErrorCategory::kInternal: return "internal";
  }
  return "internal";
}

std::string Error::to_string() const {
  std::string out(cuda_agent::to_string(category));
  out += '/';
  out += code;
  out += ": ";
  out += message;
  return out;
}

Error Error::with_context(std::string_view context) const {
  Error e = *this;
  e.message = std::string(context) + ": " + message;
  return e;
}

Error make_error(ErrorCategory category, std::string code, std::string message) {
  return Error{category, std::move(code), std::move(message)};
}

}  // namespace cuda_agent
