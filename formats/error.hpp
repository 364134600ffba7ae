// Errors carry a category so that the CLI maps them to distinct exit codes and
// API users can tell bad input from I/O trouble.
#pragma once
#include <stdexcept>
#include <string>

namespace spconv {

enum class errc {
  usage = 2,        // wrong command line or API arguments (unknown format name, bad parameter)
  bad_input = 3,    // malformed or lying input file, invariant broken
  io = 4,           // cannot open/read/write/rename a file, disk full
  unsupported = 5,  // well-formed input that spconv does not handle (complex values, too many columns)
  device = 6,       // GPU missing or out of memory
};

class error : public std::runtime_error {
 public:
  error(errc c, const std::string& what) : std::runtime_error(what), code_(c) {}
  errc code() const noexcept { return code_; }

 private:
  errc code_;
};

[[noreturn]] inline void fail(errc c, const std::string& what) { throw error(c, what); }

inline const char* errc_name(errc c) {
  switch (c) {
    case errc::usage: return "usage error";
    case errc::bad_input: return "bad input";
    case errc::io: return "I/O error";
    case errc::unsupported: return "unsupported";
    case errc::device: return "device error";
  }
  return "error";
}

}  // namespace spconv
