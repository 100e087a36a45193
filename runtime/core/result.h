// Result<T>: a value or an Error, without exceptions.
#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "runtime/core/error.h"

namespace ember {

template <typename T>
class [[nodiscard]] Result final {
 public:
  Result(T&& value) : has_value_(true) { new (&value_) T(std::move(value)); }
  Result(const T& value) : has_value_(true) { new (&value_) T(value); }
  Result(Error error) : error_(error), has_value_(false) {
    if (error_ == Error::Ok) error_ = Error::Internal;  // Ok carries no value.
  }
  Result(Result&& other) : has_value_(other.has_value_) {
    if (has_value_) {
      new (&value_) T(std::move(other.value_));
    } else {
      error_ = other.error_;
    }
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (has_value_) value_.~T();
  }

  bool ok() const { return has_value_; }
  Error error() const { return has_value_ ? Error::Ok : error_; }

  /// The value; only valid when ok().
  T& get() { return value_; }
  const T& get() const { return value_; }
  T& operator*() { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }

 private:
  union {
    T value_;
    Error error_;
  };
  bool has_value_;
};

}  // namespace ember
