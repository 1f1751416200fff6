// Result<T>: a value or an Error, the way operating errors cross module boundaries.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/assert.h"
#include "base/error_code.h"

namespace cairva {

struct Error {
  ErrorCode code = ErrorCode::internal_error;
  std::string message;
};

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    CAIRVA_ASSERT(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    CAIRVA_ASSERT(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    CAIRVA_ASSERT(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    CAIRVA_ASSERT(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    CAIRVA_ASSERT(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace cairva
