// Errors in wmtune come in two kinds (STYLE.md 7):
//  - UserError: the input is wrong (a bad flag, spec, file). The CLI prints the message, which
//    names the file/node/flag, and exits with code 2.
//  - InternalError: a broken invariant inside wmtune. Raised by WM_CHECK; the CLI prints it as
//    an internal error (exit 3). It is never the user's fault.
// A failed candidate kernel is neither: it is data (an error code in the tuning log).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace wm {

class UserError : public std::runtime_error {
public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string& msg) : std::logic_error(msg) {}
};

namespace detail {
// Collects a message with operator<< and throws when destroyed at the end of the statement.
class CheckFailure {
public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << file << ":" << line << ": check failed: " << cond << ": ";
  }
  template <typename T> CheckFailure& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] ~CheckFailure() noexcept(false) { throw InternalError(os_.str()); }

private:
  std::ostringstream os_;
};
} // namespace detail

/// Builds a user-facing message with operator<< and throws UserError.
class UserErrorBuilder {
public:
  template <typename T> UserErrorBuilder& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] ~UserErrorBuilder() noexcept(false) { throw UserError(os_.str()); }

private:
  std::ostringstream os_;
};

} // namespace wm

/// Internal invariant: `WM_CHECK(x > 0) << "extent of " << name;`
// (a while, not an if/else, so that an unbraced `if (...) WM_CHECK(...)` has no dangling else;
// the body throws, so it never loops)
#define WM_CHECK(cond)                                                                             \
  while (!(cond)) ::wm::detail::CheckFailure(__FILE__, __LINE__, #cond)

/// User error: `WM_USER_ERROR() << "workload '" << spec << "': unknown op";`
#define WM_USER_ERROR() ::wm::UserErrorBuilder()
