// Internals shared by the Matrix Market reader's stages (not part of the API).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "formats/error.hpp"
#include "io/mtx.hpp"

namespace spconv::mtx_detail {

// Throws spconv::error(c, "PATH:LINE: what").
[[noreturn]] void fail_at(errc c, const std::filesystem::path& path, std::int64_t line, const std::string& what);

// Throws errc::io "PATH: what (reason)", the reason from errno: call it right after the
// failing system call.
[[noreturn]] void fail_errno(const std::filesystem::path& path, const std::string& what);

// The token starting at p (up to whitespace or the line end, at most 40 characters), for
// messages: "found 'abc'".
std::string token_at(const char* p, const char* end);

// Separators inside a line. '\r' counts as one so that CRLF files need no special path.
inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

enum class layout { coordinate, array };
enum class field_kind { real, integer, pattern };
enum class symmetry_kind { general, symmetric, skew };  // hermitian reads as symmetric

struct parsed_header {
  mtx_header header;
  layout shape = layout::coordinate;
  field_kind field = field_kind::real;
  symmetry_kind symmetry = symmetry_kind::general;
  std::size_t body_offset = 0;  // first byte after the size line
};

// Parses banner, comment lines and size line at the start of `text`. Returns nullopt when
// `text` ends before the size line does and more may follow (!at_eof); at_eof turns that
// into an error. Every error names `path` and the line.
std::optional<parsed_header> parse_header(std::string_view text, bool at_eof, const std::filesystem::path& path);

}  // namespace spconv::mtx_detail
