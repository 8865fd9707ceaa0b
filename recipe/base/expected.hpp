#pragma once

#include <utility>
#include <variant>

namespace deepinfer {

/// A value or an error (a small stand-in for C++23 `std::expected`, which g++ 12 lacks in C++20):
/// the one result type of the plain libraries (recipe/, engine/, kv/, balancers/; STYLE §6).
/// actors/ translates the error into a `caf::error` at the actor boundary.
/// Precondition for `value()` / `operator*`: `has_value()`; for `error()`: `!has_value()`.
template <class T, class E>
class expected {
public:
  expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  expected(E error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& { return std::get<1>(v_); }
  E&& error() && { return std::get<1>(std::move(v_)); }

private:
  std::variant<T, E> v_;
};

} // namespace deepinfer
