// Matrix Market reader: file bytes (mmap or gzip), chunking at line boundaries, parallel
// body parsing with std::from_chars, symmetry expansion.
//
// Plan (each stage a pass over memory, parallel over one chunk per thread):
//   1. the file's bytes: mmap'd (regular files), read (pipes), inflated (.gz);
//   2. crc32 of the stored bytes, per block and combined with crc32_combine;
//   3. the body (after the size line) split into chunks at '\n'; each chunk counts its
//      lines and entry lines, which gives every chunk its first line number (for
//      messages) and its first output slot, and checks the declared entry count before
//      anything is allocated;
//   4. each chunk parses its entries straight into the COO arrays at its slot;
//   5. symmetric files: each chunk appends the mirrors of its off-diagonal entries after
//      all stored entries, at an offset given by the counts of step 4.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <vector>

#include "formats/parallel.hpp"
#include "io/mtx_detail.hpp"
#include "io/physical_memory.hpp"

namespace spconv {
namespace {
namespace fs = std::filesystem;
using namespace mtx_detail;

// ---- 1. the file's bytes ---------------------------------------------------------------

// A regular file is mapped (no copy, no page faults on a fresh buffer: a 231 MB file maps
// in ~20 ms where a read() into new memory takes ~0.3 s here); anything else (a pipe,
// /proc) is read into memory.
class raw_file {
 public:
  explicit raw_file(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail_errno(path, "cannot open");
    struct fd_closer {
      int fd;
      ~fd_closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail_errno(path, "cannot stat");
    if (S_ISDIR(st.st_mode)) fail(errc::io, path.string() + ": is a directory, not a Matrix Market file");
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p != MAP_FAILED) {
        map_ = p;
        data_ = static_cast<const char*>(p);
        size_ = static_cast<std::size_t>(st.st_size);
        return;
      }
    }
    std::size_t used = 0;
    heap_.resize(S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : std::size_t{1} << 16);
    for (;;) {
      if (used == heap_.size()) heap_.resize(heap_.size() * 2);
      ssize_t n = ::read(fd, heap_.data() + used, heap_.size() - used);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail_errno(path, "cannot read");
      if (n == 0) break;
      used += static_cast<std::size_t>(n);
    }
    heap_.resize(used);
    data_ = heap_.data();
    size_ = used;
  }
  ~raw_file() {
    if (map_) ::munmap(map_, size_);
  }
  raw_file(const raw_file&) = delete;
  raw_file& operator=(const raw_file&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void* map_ = nullptr;
  array<char> heap_;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

bool is_gzip(const char* p, std::size_t n) {
  return n >= 2 && static_cast<unsigned char>(p[0]) == 0x1f && static_cast<unsigned char>(p[1]) == 0x8b;
}

// Inflates every gzip member (RFC 1952 allows several, concatenated). zlib takes 32-bit
// lengths, so input and output are fed in slices.
array<char> gunzip(const char* in, std::size_t n, const fs::path& path) {
  constexpr std::size_t slice = std::size_t{1} << 30;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(errc::io, path.string() + ": cannot start zlib");
  struct ender {
    z_stream* z;
    ~ender() { inflateEnd(z); }
  } end_zs{&zs};
  // The trailer's ISIZE (size mod 2^32 of the last member) is a good first guess.
  std::size_t isize = n >= 4 ? (static_cast<std::size_t>(static_cast<unsigned char>(in[n - 1])) << 24 |
                                static_cast<std::size_t>(static_cast<unsigned char>(in[n - 2])) << 16 |
                                static_cast<std::size_t>(static_cast<unsigned char>(in[n - 3])) << 8 |
                                static_cast<std::size_t>(static_cast<unsigned char>(in[n - 4])))
                             : 0;
  array<char> out(std::max<std::size_t>({isize + 1, n, 1 << 16}));
  const double limit = physical_memory_bytes();
  std::size_t used_in = 0, used_out = 0;
  for (;;) {
    if (used_out == out.size()) {
      if (2.0 * static_cast<double>(out.size()) > limit)
        fail(errc::bad_input, path.string() + ": gzip data inflates beyond this machine's memory");
      out.resize(out.size() * 2);
    }
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in + used_in));
    zs.avail_in = static_cast<uInt>(std::min(n - used_in, slice));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + used_out);
    zs.avail_out = static_cast<uInt>(std::min(out.size() - used_out, slice));
    const uInt avail_in = zs.avail_in, avail_out = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    used_in += avail_in - zs.avail_in;
    used_out += avail_out - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (used_in == n) break;
      if (!is_gzip(in + used_in, n - used_in))
        fail(errc::bad_input, path.string() + ": unexpected bytes after the gzip data (offset " +
                                  std::to_string(used_in) + ")");
      inflateReset(&zs);
    } else if (rc == Z_BUF_ERROR || rc == Z_OK) {
      if (used_in == n && zs.avail_out != 0)
        fail(errc::bad_input, path.string() + ": gzip data is truncated");
    } else {
      fail(errc::bad_input, path.string() + ": corrupt gzip data (" + (zs.msg ? zs.msg : "zlib error " + std::to_string(rc)) + ")");
    }
  }
  out.resize(used_out);
  return out;
}

// ---- 2. crc32 --------------------------------------------------------------------------

std::uint32_t crc32_parallel(const char* p, std::size_t n) {
  const int blocks = block_count(static_cast<std::int64_t>(n), std::int64_t{1} << 20);
  std::vector<uLong> part(blocks);
  parallel_blocks(static_cast<std::int64_t>(n), blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    part[b] = crc32_z(0, reinterpret_cast<const Bytef*>(p + lo), static_cast<std::size_t>(hi - lo));
  });
  uLong crc = crc32_z(0, nullptr, 0);
  for (int b = 0; b < blocks; ++b) {
    const std::int64_t lo = static_cast<std::int64_t>(n) * b / blocks, hi = static_cast<std::int64_t>(n) * (b + 1) / blocks;
    crc = crc32_combine(crc, part[b], static_cast<z_off_t>(hi - lo));
  }
  return static_cast<std::uint32_t>(crc);
}

// ---- 3. chunks -------------------------------------------------------------------------

struct chunk {
  const char* begin = nullptr;
  const char* end = nullptr;  // just after a '\n', or the end of the body
  std::int64_t lines = 0;     // lines starting in the chunk
  std::int64_t entries = 0;   // of which entry lines (not blank, not a comment)
  std::int64_t first_line = 0, first_entry = 0;
  std::int64_t mirrors = 0, first_mirror = 0;  // off-diagonal entries of a symmetric file
};

std::vector<chunk> split_body(const char* b, const char* e) {
  const int n = block_count(e - b, std::int64_t{1} << 18);
  std::vector<chunk> out(n);
  const char* at = b;
  for (int i = 0; i < n; ++i) {
    out[i].begin = at;
    if (i + 1 == n) {
      at = e;
    } else {
      const char* cut = std::max(at, b + (e - b) * (i + 1) / n);
      const char* nl = cut < e ? static_cast<const char*>(std::memchr(cut, '\n', e - cut)) : nullptr;
      at = nl ? nl + 1 : e;
    }
    out[i].end = at;
  }
  return out;
}

// Calls f(is_entry) for every line of the chunk. An entry line has something
// other than blanks before its end and does not start with '%'. The parser below walks
// lines with the same rule, so the counts here are the slots it fills.
template <class F>
void for_each_line(const chunk& c, F&& f) {
  const char* p = c.begin;
  while (p < c.end) {
    const char* s = p;
    while (s < c.end && is_blank(*s)) ++s;
    const bool entry = s < c.end && *s != '\n' && *s != '%';
    if (!f(entry)) return;
    const char* nl = static_cast<const char*>(std::memchr(s, '\n', c.end - s));
    p = nl ? nl + 1 : c.end;
  }
}

void count_lines(chunk& c) {
  std::int64_t lines = 0, entries = 0;
  for_each_line(c, [&](bool entry) {
    ++lines;
    entries += entry;
    return true;
  });
  c.lines = lines;
  c.entries = entries;
}

// Line number of the chunk's k-th entry line (0-based); for the "too many entries" message.
std::int64_t line_of_entry(const chunk& c, std::int64_t k) {
  std::int64_t line = c.first_line, found = -1;
  for_each_line(c, [&](bool entry) {
    if (entry && k-- == 0) {
      found = line;
      return false;
    }
    ++line;
    return true;
  });
  return found;
}

// ---- 4. parsing ------------------------------------------------------------------------

struct context {
  const fs::path* path;
  std::int64_t rows, cols;
  symmetry_kind symmetry;
};

const char* skip_blanks(const char* p, const char* e) {
  while (p < e && is_blank(*p)) ++p;
  return p;
}

bool at_line_end(const char* p, const char* e) { return p == e || *p == '\n'; }

[[noreturn]] void entry_error(const context& cx, std::int64_t line, const std::string& what) {
  fail_at(errc::bad_input, *cx.path, line, what);
}

// What the entry line of `l` holds, for messages about a missing or extra token.
std::string line_form(layout l, field_kind f) {
  if (l == layout::array) return "an array line holds one value";
  if (f == field_kind::pattern) return "a pattern entry line holds row and column";
  return "an entry line holds row, column and value";
}

// A 1-based row or column index, checked against its bound. Returns the position after it.
[[gnu::always_inline]] inline const char* parse_index(const context& cx, std::int64_t line, const char* p,
                                                      const char* e, const char* what, std::int64_t bound,
                                                      layout l, field_kind f, std::uint64_t& out) {
  const char* s = p;
  std::uint64_t v = 0;
  while (p < e) {
    const unsigned d = static_cast<unsigned char>(*p) - static_cast<unsigned>('0');
    if (d > 9) break;
    v = v * 10 + d;
    ++p;
  }
  if (p == s || !(at_line_end(p, e) || is_blank(*p))) [[unlikely]] {
    if (at_line_end(s, e)) entry_error(cx, line, std::string("missing ") + what + " index (" + line_form(l, f) + ")");
    entry_error(cx, line, std::string("expected a ") + what + " index (a positive integer), found '" + token_at(s, e) + "'");
  }
  if (p - s > 18) [[unlikely]] {
    // 19 digits and more may have wrapped: redo it with overflow checks (leading zeros are legal).
    v = 0;
    for (const char* q = s; q < p; ++q)
      if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, static_cast<unsigned>(*q - '0'), &v))
        entry_error(cx, line, std::string(what) + " index " + std::string(s, p) + " does not fit in 64 bits");
  }
  if (v == 0 || v > static_cast<std::uint64_t>(bound)) [[unlikely]]
    entry_error(cx, line, std::string(what) + " index " + std::to_string(v) + " is out of range (the matrix has " +
                              std::to_string(bound) + " " + what + "s; indices are 1-based)");
  out = v;
  return p;
}

// from_chars reports result_out_of_range (and leaves the value alone) for numbers beyond
// the type's range, where strtod gives +-inf or +-0. Which one follows from the decimal
// exponent of the first significant digit: the token is far outside the range, so its
// sign is all that counts.
template <class V>
V out_of_range_value(const char* s, const char* e) {
  const bool negative = *s == '-';
  if (*s == '-' || *s == '+') ++s;
  // Significant digits before the point, or zeros between the point and the first one.
  std::int64_t int_digits = 0, frac_zeros = 0;
  bool point = false, found = false;
  for (; s < e && ((*s >= '0' && *s <= '9') || *s == '.'); ++s) {
    if (*s == '.') {
      point = true;
    } else if (!found && *s == '0') {
      frac_zeros += point;
    } else {
      found = true;
      int_digits += !point;
    }
  }
  std::int64_t exp = 0;
  if (s < e && (*s == 'e' || *s == 'E')) {
    ++s;
    const bool exp_negative = s < e && *s == '-';
    if (s < e && (*s == '-' || *s == '+')) ++s;
    for (; s < e && *s >= '0' && *s <= '9'; ++s) exp = std::min<std::int64_t>(exp * 10 + (*s - '0'), std::int64_t{1} << 40);
    if (exp_negative) exp = -exp;
  }
  const std::int64_t lead = int_digits > 0 ? int_digits - 1 : -(frac_zeros + 1);
  const V mag = lead + exp >= 0 ? std::numeric_limits<V>::infinity() : V(0);
  return negative ? -mag : mag;
}

template <class V, field_kind F>
[[gnu::always_inline]] inline const char* parse_value(const context& cx, std::int64_t line, const char* p,
                                                      const char* e, layout l, V& out) {
  if (at_line_end(p, e)) [[unlikely]]
    entry_error(cx, line, std::string("missing value (") + line_form(l, F) + ")");
  const char* s = p;
  // from_chars takes no '+' (strtod and some writers do): skip one, but not "+-1".
  if (*p == '+' && p + 1 < e && p[1] != '-') ++p;
  const char* q;
  std::errc ec;
  if constexpr (F == field_kind::integer) {
    std::int64_t x = 0;
    auto r = std::from_chars(p, e, x);
    q = r.ptr;
    ec = r.ec;
    out = static_cast<V>(x);
    if (ec == std::errc::result_out_of_range)
      entry_error(cx, line, "integer value " + token_at(s, e) + " does not fit in 64 bits");
  } else {
    auto r = std::from_chars(p, e, out);
    q = r.ptr;
    ec = r.ec;
    if (ec == std::errc::result_out_of_range) {
      out = out_of_range_value<V>(s, q);
      ec = std::errc();
    }
  }
  if (ec != std::errc() || !(at_line_end(q, e) || is_blank(*q))) [[unlikely]]
    entry_error(cx, line, std::string(F == field_kind::integer ? "expected an integer value" : "expected a real value") +
                              ", found '" + token_at(s, e) + "'");
  return q;
}

// Walks the array layout's column-major positions: all of each column (general), rows
// j..n-1 of column j (symmetric: lower triangle with diagonal), rows j+1..n-1
// (skew-symmetric: strictly lower). Report sec. 3.
struct array_cursor {
  std::int64_t i = 0, j = 0, rows = 0;
  symmetry_kind sym = symmetry_kind::general;

  array_cursor(std::int64_t start, std::int64_t rows_, symmetry_kind s) : rows(rows_), sym(s) {
    if (sym == symmetry_kind::general) {
      if (rows > 0) {
        i = start % rows;
        j = start / rows;
      }
      return;
    }
    j = 0;
    for (;;) {
      const std::int64_t len = rows - j - (sym == symmetry_kind::skew);
      if (start < len || len <= 0) break;
      start -= len;
      ++j;
    }
    i = j + (sym == symmetry_kind::skew) + start;
  }
  void advance() {
    if (++i < rows) return;
    ++j;
    i = sym == symmetry_kind::general ? 0 : j + (sym == symmetry_kind::skew);
  }
};

template <class V, class I, layout L, field_kind F>
void parse_chunk(const context& cx, chunk& c, I* ri, I* ci, V* vals) {
  const char* p = c.begin;
  const char* const e = c.end;
  std::int64_t line = c.first_line, k = c.first_entry, mirrors = 0;
  const bool sym = cx.symmetry != symmetry_kind::general, skew = cx.symmetry == symmetry_kind::skew;
  array_cursor pos(L == layout::array ? c.first_entry : 0, cx.rows, cx.symmetry);
  while (p < e) {
    p = skip_blanks(p, e);
    if (p == e) break;
    if (*p == '\n' || *p == '%') {  // blank line or comment
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', e - p));
      p = nl ? nl + 1 : e;
      ++line;
      continue;
    }
    V v;
    std::int64_t r, col;
    if constexpr (L == layout::coordinate) {
      std::uint64_t ur, uc;
      p = parse_index(cx, line, p, e, "row", cx.rows, L, F, ur);
      p = skip_blanks(p, e);
      p = parse_index(cx, line, p, e, "column", cx.cols, L, F, uc);
      r = static_cast<std::int64_t>(ur) - 1;
      col = static_cast<std::int64_t>(uc) - 1;
      if constexpr (F == field_kind::pattern) {
        v = V(1);
      } else {
        p = skip_blanks(p, e);
        p = parse_value<V, F>(cx, line, p, e, L, v);
      }
      if (skew && r == col) [[unlikely]]
        entry_error(cx, line, "diagonal entry (" + std::to_string(r + 1) + ", " + std::to_string(r + 1) +
                                  ") in a skew-symmetric matrix (its diagonal is zero and not stored)");
    } else {
      p = parse_value<V, F>(cx, line, p, e, L, v);
      r = pos.i;
      col = pos.j;
      pos.advance();
    }
    p = skip_blanks(p, e);
    if (!at_line_end(p, e)) [[unlikely]]
      entry_error(cx, line, "unexpected '" + token_at(p, e) + "' at the end of the line (" + line_form(L, F) + ")");
    ri[k] = static_cast<I>(r);
    ci[k] = static_cast<I>(col);
    vals[k] = v;
    ++k;
    mirrors += sym && r != col;
    p += p < e;  // the '\n'
    ++line;
  }
  c.mirrors = mirrors;
}

// ---- 5. symmetry expansion -------------------------------------------------------------

template <class V, class I>
void write_mirrors(const chunk& c, bool skew, I* ri, I* ci, V* vals) {
  std::int64_t w = c.first_mirror;
  for (std::int64_t k = c.first_entry, end = c.first_entry + c.entries; k < end; ++k) {
    if (ri[k] == ci[k]) continue;
    ri[w] = ci[k];
    ci[w] = ri[k];
    vals[w] = skew ? -vals[k] : vals[k];
    ++w;
  }
}

template <class V, class I>
void fill(const context& cx, const parsed_header& ph, std::vector<chunk>& chunks, std::int64_t stored,
          bool forced_index, mtx_data& out) {
  using parse_fn = void (*)(const context&, chunk&, I*, I*, V*);
  parse_fn parse = nullptr;
  if (ph.shape == layout::coordinate) {
    if (ph.field == field_kind::real) parse = parse_chunk<V, I, layout::coordinate, field_kind::real>;
    else if (ph.field == field_kind::integer) parse = parse_chunk<V, I, layout::coordinate, field_kind::integer>;
    else parse = parse_chunk<V, I, layout::coordinate, field_kind::pattern>;
  } else {
    if (ph.field == field_kind::integer) parse = parse_chunk<V, I, layout::array, field_kind::integer>;
    else parse = parse_chunk<V, I, layout::array, field_kind::real>;
  }
  const bool sym = ph.symmetry != symmetry_kind::general;
  const std::int64_t bound = sym ? 2 * stored : stored;

  auto& m = out.matrix.emplace<coo<V, I>>();
  m.rows = ph.header.rows;
  m.cols = ph.header.cols;
  m.row_idx.resize(bound);
  m.col_idx.resize(bound);
  m.values.resize(bound);
  const int n = static_cast<int>(chunks.size());
  parallel_blocks(n, n, [&](int b, std::int64_t, std::int64_t) {
    parse(cx, chunks[b], m.row_idx.data(), m.col_idx.data(), m.values.data());
  });
  std::int64_t total = stored;
  if (sym) {
    for (auto& c : chunks) {
      c.first_mirror = total;
      total += c.mirrors;
    }
    if (forced_index && total > static_cast<std::int64_t>(std::numeric_limits<I>::max()))
      fail_at(errc::unsupported, *cx.path, ph.header.header_lines,
              std::to_string(total) + " entries after symmetry expansion do not fit " + std::string(type_name<I>()) +
                  " indices");
    const bool skew = ph.symmetry == symmetry_kind::skew;
    parallel_blocks(n, n, [&](int b, std::int64_t, std::int64_t) {
      write_mirrors(chunks[b], skew, m.row_idx.data(), m.col_idx.data(), m.values.data());
    });
  }
  m.row_idx.resize(total);
  m.col_idx.resize(total);
  m.values.resize(total);
}

}  // namespace

mtx_data read_mtx(const fs::path& path, const mtx_read_options& opt) {
  raw_file raw(path);
  mtx_data out;
  out.file_bytes = raw.size();
  out.crc32 = crc32_parallel(raw.data(), raw.size());

  array<char> inflated;
  const char* text = raw.data();
  std::size_t size = raw.size();
  if (is_gzip(text, size)) {
    inflated = gunzip(text, size, path);
    text = inflated.data();
    size = inflated.size();
  }
  const parsed_header ph = *parse_header(std::string_view(text, size), true, path);
  out.header = ph.header;
  const mtx_header& h = out.header;
  const bool coord = ph.shape == layout::coordinate;
  const std::string noun = coord ? "entries" : "values";

  auto chunks = split_body(text + ph.body_offset, text + size);
  const int n = static_cast<int>(chunks.size());
  parallel_blocks(n, n, [&](int b, std::int64_t, std::int64_t) { count_lines(chunks[b]); });
  std::int64_t line = h.header_lines + 1, stored = 0;
  for (auto& c : chunks) {
    c.first_line = line;
    c.first_entry = stored;
    line += c.lines;
    stored += c.entries;
  }
  // The declared count is checked against the lines that are there before anything is
  // allocated: a size line claiming 10^12 entries in a small file fails here.
  if (stored < h.entries)
    fail_at(errc::bad_input, path, line - 1,
            "expected " + std::to_string(h.entries) + " " + noun + ", file ends after " + std::to_string(stored));
  if (stored > h.entries) {
    for (const auto& c : chunks)
      if (c.first_entry + c.entries > h.entries)
        fail_at(errc::bad_input, path, line_of_entry(c, h.entries - c.first_entry),
                "too many " + noun + ": the size line declares " + std::to_string(h.entries));
  }

  constexpr std::int64_t i32_max = std::numeric_limits<std::int32_t>::max();
  const bool sym = ph.symmetry != symmetry_kind::general;
  const std::int64_t bound = sym ? 2 * stored : stored;  // expanded entries, at most
  index_type index = h.rows > i32_max || h.cols > i32_max || bound > i32_max ? index_type::i64 : index_type::i32;
  if (opt.force_index) {
    if (opt.index == index_type::i32 && (h.rows > i32_max || h.cols > i32_max || stored > i32_max))
      fail_at(errc::unsupported, path, h.header_lines,
              std::to_string(h.rows) + " x " + std::to_string(h.cols) + " with " + std::to_string(stored) + " " + noun +
                  " does not fit int32 indices");
    index = opt.index;
  }
  // Refuse what cannot be held before allocating: the COO, then the CSR built from it, side by
  // side, and per row both the row pointer and the count cpu::coo_to_csr keeps beside it (a
  // size line of 2^31 rows over a few entries needs 34 GB for those alone).
  const double index_bytes = index == index_type::i32 ? 4 : 8, value_bytes = opt.values == value_type::f32 ? 4 : 8;
  const double need = 2.0 * static_cast<double>(bound) * (2 * index_bytes + value_bytes) +
                      2.0 * (static_cast<double>(h.rows) + 1) * index_bytes;
  if (need > physical_memory_bytes())
    fail_at(errc::bad_input, path, h.header_lines,
            "a " + std::to_string(h.rows) + " x " + std::to_string(h.cols) + " matrix with " + std::to_string(bound) +
                " entries needs " + gigabytes(need) + " as COO and CSR, more than this machine's " +
                gigabytes(physical_memory_bytes()) + " of memory");

  const context cx{&path, h.rows, h.cols, ph.symmetry};
  if (opt.values == value_type::f32) {
    if (index == index_type::i32) fill<float, std::int32_t>(cx, ph, chunks, stored, opt.force_index, out);
    else fill<float, std::int64_t>(cx, ph, chunks, stored, opt.force_index, out);
  } else {
    if (index == index_type::i32) fill<double, std::int32_t>(cx, ph, chunks, stored, opt.force_index, out);
    else fill<double, std::int64_t>(cx, ph, chunks, stored, opt.force_index, out);
  }
  return out;
}

}  // namespace spconv
