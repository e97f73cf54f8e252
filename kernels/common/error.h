// Errors are values until the edge (DESIGN.md rule 7): library code returns
// Result<T>; only the CLI turns an Error into a message and an exit code.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace noeira {

// One line: what went wrong, naming the thing, and how to fix it.
struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : e_(std::move(e)) {}
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace noeira

// Propagate an error from a Status/Result expression.
#define NOEIRA_TRY(expr)                                   \
  do {                                                     \
    auto noeira_try_status_ = (expr);                      \
    if (!noeira_try_status_.ok()) return noeira_try_status_.error(); \
  } while (0)
