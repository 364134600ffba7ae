// Matrix Market header: banner, comment lines, size line (format report sec. 2-3).
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "io/mtx_detail.hpp"

namespace spconv::mtx_detail {
namespace fs = std::filesystem;

void fail_at(errc c, const fs::path& path, std::int64_t line, const std::string& what) {
  fail(c, path.string() + ":" + std::to_string(line) + ": " + what);
}

void fail_errno(const fs::path& path, const std::string& what) {
  const std::string reason = std::strerror(errno);  // before anything else can change errno
  fail(errc::io, path.string() + ": " + what + " (" + reason + ")");
}

std::string token_at(const char* p, const char* end) {
  const char* q = p;
  while (q < end && q - p < 40 && !is_blank(*q) && *q != '\n') ++q;
  return std::string(p, q);
}

namespace {

constexpr std::string_view banner_form = "'%%MatrixMarket matrix <coordinate|array> <field> <symmetry>'";

// The banner's words are case-insensitive (the report's examples mix cases; so do files).
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !is_blank(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// A blank line or a comment ('%' after optional whitespace): skipped before the size line.
bool skippable(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  return i == line.size() || line[i] == '%';
}

std::string shorten(std::string_view s) {
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s.size() > 60 ? std::string(s.substr(0, 60)) + "..." : std::string(s);
}

struct line_reader {
  std::string_view text;
  bool at_eof;
  std::size_t pos = 0;
  std::int64_t line = 0;
  bool need_more = false;

  // The next line without its '\n'; nullopt at the end of the text (need_more tells
  // whether the text was cut short rather than the file ending).
  std::optional<std::string_view> next() {
    if (pos >= text.size()) {
      need_more = !at_eof;
      return std::nullopt;
    }
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (!at_eof) {
        need_more = true;
        return std::nullopt;
      }
      nl = text.size();
    }
    std::string_view l = text.substr(pos, nl - pos);
    pos = std::min(nl + 1, text.size());
    ++line;
    return l;
  }
};

}  // namespace

std::optional<parsed_header> parse_header(std::string_view text, bool at_eof, const fs::path& path) {
  line_reader in{text, at_eof};
  parsed_header out;
  mtx_header& h = out.header;

  // ---- banner: "%%MatrixMarket object format field symmetry" --------------------------
  auto banner = in.next();
  if (!banner) {
    if (in.need_more) return std::nullopt;
    fail_at(errc::bad_input, path, 1, "expected the banner " + std::string(banner_form) + ", file is empty");
  }
  auto words = split(*banner);
  if (words.empty() || lower(words[0]) != "%%matrixmarket")
    fail_at(errc::bad_input, path, 1,
            "expected the banner " + std::string(banner_form) + ", found '" + shorten(*banner) + "'");
  auto word = [&](std::size_t i, std::string_view what) {
    if (i >= words.size())
      fail_at(errc::bad_input, path, 1, "the banner ends before the " + std::string(what) + "; expected " +
                                            std::string(banner_form));
    return lower(words[i]);
  };
  if (std::string object = word(1, "object ('matrix')"); object != "matrix")
    fail_at(errc::unsupported, path, 1, "object '" + object + "' is not supported (only 'matrix')");

  h.format = word(2, "format (coordinate or array)");
  if (h.format == "coordinate") out.shape = layout::coordinate;
  else if (h.format == "array") out.shape = layout::array;
  else fail_at(errc::bad_input, path, 1, "unknown format '" + h.format + "' in the banner (expected coordinate or array)");

  h.field = word(3, "field (real, integer, pattern or complex)");
  bool complex = false;
  if (h.field == "real") out.field = field_kind::real;
  else if (h.field == "integer") out.field = field_kind::integer;
  else if (h.field == "pattern") out.field = field_kind::pattern;
  else if (h.field == "complex") complex = true;
  else
    fail_at(errc::bad_input, path, 1,
            "unknown field '" + h.field + "' in the banner (expected real, integer, pattern or complex)");

  h.symmetry = word(4, "symmetry (general, symmetric, skew-symmetric or hermitian)");
  // Hermitian on a real or integer field is symmetric: the conjugate of a real is itself.
  if (h.symmetry == "general") out.symmetry = symmetry_kind::general;
  else if (h.symmetry == "symmetric" || h.symmetry == "hermitian") out.symmetry = symmetry_kind::symmetric;
  else if (h.symmetry == "skew-symmetric") out.symmetry = symmetry_kind::skew;
  else
    fail_at(errc::bad_input, path, 1,
            "unknown symmetry '" + h.symmetry + "' in the banner (expected general, symmetric, skew-symmetric or hermitian)");
  if (words.size() > 5)
    fail_at(errc::bad_input, path, 1, "unexpected '" + std::string(words[5]) + "' after the symmetry in the banner");
  if (complex) fail_at(errc::unsupported, path, 1, "complex values are not supported");
  // The report allows 'pattern' only for coordinate files, and a pattern has no values
  // that a skew-symmetric mirror could negate.
  if (out.field == field_kind::pattern && out.shape == layout::array)
    fail_at(errc::bad_input, path, 1, "field 'pattern' is only valid with the coordinate format");
  if (out.field == field_kind::pattern && out.symmetry == symmetry_kind::skew)
    fail_at(errc::bad_input, path, 1, "a pattern matrix cannot be skew-symmetric (it has no values to negate)");

  // ---- comments and blank lines, then the size line ------------------------------------
  std::optional<std::string_view> size_line;
  while ((size_line = in.next()) && skippable(*size_line)) {
  }
  const bool coord = out.shape == layout::coordinate;
  const std::string size_form = coord ? "'rows cols entries'" : "'rows cols'";
  if (!size_line) {
    if (in.need_more) return std::nullopt;
    fail_at(errc::bad_input, path, in.line + 1, "expected the size line " + size_form + ", file ends");
  }
  auto sizes = split(*size_line);
  const std::size_t expected = coord ? 3 : 2;
  auto invalid_size = [&] {
    fail_at(errc::bad_input, path, in.line,
            "invalid size line '" + shorten(*size_line) + "': expected " + size_form + " (non-negative integers)");
  };
  if (sizes.size() != expected) invalid_size();
  std::int64_t v[3] = {0, 0, 0};
  for (std::size_t i = 0; i < expected; ++i) {
    std::string_view s = sizes[i];
    const bool negative = s.size() > 1 && s[0] == '-';
    std::string_view digits = negative ? s.substr(1) : s;
    std::uint64_t x = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') invalid_size();
      if (x > (static_cast<std::uint64_t>(INT64_MAX) - static_cast<std::uint64_t>(c - '0')) / 10)
        fail_at(errc::bad_input, path, in.line, "size '" + std::string(s) + "' in the size line does not fit in 64 bits");
      x = x * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (negative && x != 0)
      fail_at(errc::bad_input, path, in.line, "negative size " + std::string(s) + " in the size line");
    v[i] = static_cast<std::int64_t>(x);
  }
  h.rows = v[0];
  h.cols = v[1];
  h.header_lines = in.line;
  if (out.symmetry != symmetry_kind::general && h.rows != h.cols)
    fail_at(errc::bad_input, path, in.line,
            "a " + h.symmetry + " matrix must be square, the size line gives " + std::to_string(h.rows) + " x " +
                std::to_string(h.cols));
  if (coord) {
    h.entries = v[2];
  } else {
    // Column-major values: all of them (general), the lower triangle with the diagonal
    // (symmetric), or the strictly lower triangle (skew-symmetric): report sec. 3.
    std::int64_t n = 0;
    bool overflow = false;
    if (out.symmetry == symmetry_kind::general) overflow = __builtin_mul_overflow(h.rows, h.cols, &n);
    else if (out.symmetry == symmetry_kind::symmetric) overflow = __builtin_mul_overflow(h.rows, h.rows + 1, &n), n /= 2;
    else overflow = __builtin_mul_overflow(h.rows, std::max<std::int64_t>(h.rows - 1, 0), &n), n /= 2;
    if (overflow)
      fail_at(errc::bad_input, path, in.line,
              "array of " + std::to_string(h.rows) + " x " + std::to_string(h.cols) + " values does not fit in 64 bits");
    h.entries = n;
  }
  out.body_offset = in.pos;
  return out;
}

}  // namespace spconv::mtx_detail

namespace spconv {

mtx_header read_mtx_header(const std::filesystem::path& path) {
  // gzread passes plain files through unchanged, so one path reads both.
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) mtx_detail::fail_errno(path, "cannot open");
  struct closer {
    gzFile f;
    ~closer() { gzclose(f); }
  } close_f{f};
  std::string text;
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int zerr = 0;
      const char* msg = gzerror(f, &zerr);
      // Z_ERRNO: the system call failed; anything else: the gzip data is broken.
      if (zerr == Z_ERRNO) mtx_detail::fail_errno(path, "cannot read");
      fail(errc::bad_input, path.string() + ": corrupt gzip data (" + msg + ")");
    }
    text.append(buf, static_cast<std::size_t>(n));
    if (auto h = mtx_detail::parse_header(text, n == 0, path)) return h->header;
  }
}

}  // namespace spconv
