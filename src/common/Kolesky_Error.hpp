// Host-side argument checking: bad arguments throw kolesky::invalid_argument.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kolesky {

class invalid_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace impl {

template <class... Args>
[[noreturn]] void throw_invalid(const char* routine, const Args&... args) {
  std::ostringstream s;
  s << "kolesky::" << routine << ": ";
  (s << ... << args);
  throw kolesky::invalid_argument(s.str());
}

}  // namespace impl
}  // namespace kolesky
