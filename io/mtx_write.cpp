// Matrix Market writer: "matrix coordinate real general", values in the shortest form that
// reads back to the same bits, formatted in parallel, written atomically.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <vector>

#include "formats/parallel.hpp"
#include "io/atomic_file.hpp"
#include "io/mtx_detail.hpp"

namespace spconv {
namespace {
namespace fs = std::filesystem;
using mtx_detail::fail_errno;

// The temporary file (io/atomic_file.hpp) opened for writing: created exclusively, so an
// existing file is never truncated; renamed onto the target by commit(), removed otherwise,
// so a failure never leaves a partial target behind.
class output {
 public:
  explicit output(const fs::path& target) : file_(target) {
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    // 0666 so that the umask decides the final permissions, as for any new file.
    fd_ = ::open(file_.path().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) fail_errno(target, "cannot create a temporary file in '" + dir.string() + "'");
  }
  ~output() {
    if (fd_ >= 0) ::close(fd_);
  }
  output(const output&) = delete;
  output& operator=(const output&) = delete;

  void write(const char* p, std::size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail_errno(file_.target(), "cannot write");
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  // write_mtx replaces an existing target, like any file writer; refusing to is the
  // caller's decision (the CLI's --force).
  void commit() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail_errno(file_.target(), "cannot close");
    file_.commit(/*replace=*/true);
  }

 private:
  atomic_file file_;
  int fd_ = -1;
};

// Two indices of up to 19 digits, a value (to_chars needs at most 24 characters for a
// double), separators and the newline.
constexpr std::size_t max_entry_chars = 20 + 1 + 20 + 1 + 32 + 1;

// Row of entry k: COO stores it; CSR finds it from the row pointers, moving forward from
// the row of the block's first entry.
template <class I>
struct coo_rows {
  const I* row_idx;
  auto cursor(std::int64_t) const {
    return [r = row_idx](std::int64_t k) { return static_cast<std::int64_t>(r[k]); };
  }
};
template <class I>
struct csr_rows {
  const I* row_ptr;
  std::int64_t rows;
  auto cursor(std::int64_t first) const {
    // The last row whose start is <= first (skipping empty rows).
    std::int64_t r = std::upper_bound(row_ptr, row_ptr + rows + 1, static_cast<I>(first)) - row_ptr - 1;
    return [ptr = row_ptr, r](std::int64_t k) mutable {
      while (ptr[r + 1] <= k) ++r;
      return r;
    };
  }
};

template <class V, class I, class Rows>
void write_matrix(const fs::path& path, std::int64_t rows, std::int64_t cols, std::int64_t nnz, const Rows& row_of,
                  const I* col_idx, const V* values) {
  output f(path);
  const std::string head = "%%MatrixMarket matrix coordinate real general\n% written by spconv\n" +
                           std::to_string(rows) + " " + std::to_string(cols) + " " + std::to_string(nnz) + "\n";
  f.write(head.data(), head.size());

  // Batches of a bounded size, each formatted in parallel (one buffer per block) and
  // written in order: memory stays at ~20 MB per thread whatever the matrix size.
  const int threads = thread_count();
  const std::int64_t per_block = std::int64_t{1} << 18, batch = per_block * threads;
  std::vector<array<char>> bufs(threads);
  std::vector<std::size_t> used(threads);
  for (std::int64_t b0 = 0; b0 < nnz; b0 += batch) {
    const std::int64_t b1 = std::min(nnz, b0 + batch);
    const int blocks = block_count(b1 - b0, 1 << 14);
    parallel_blocks(b1 - b0, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      lo += b0;
      hi += b0;
      auto& buf = bufs[b];
      buf.resize(static_cast<std::size_t>(hi - lo) * max_entry_chars);
      char* p = buf.data();
      char* const end = p + buf.size();
      auto row = row_of.cursor(lo);
      for (std::int64_t k = lo; k < hi; ++k) {
        p = std::to_chars(p, end, row(k) + 1).ptr;
        *p++ = ' ';
        p = std::to_chars(p, end, static_cast<std::int64_t>(col_idx[k]) + 1).ptr;
        *p++ = ' ';
        p = std::to_chars(p, end, values[k]).ptr;
        *p++ = '\n';
      }
      used[b] = static_cast<std::size_t>(p - buf.data());
    });
    for (int b = 0; b < blocks; ++b) f.write(bufs[b].data(), used[b]);
  }
  f.commit();
}

}  // namespace

void write_mtx(const fs::path& path, const any_matrix& m) {
  std::visit(
      [&](const auto& a) {
        using F = std::remove_cvref_t<decltype(a)>;
        using I = typename F::index_type;
        if constexpr (F::name == "csr") {
          validate(a);  // the row cursor relies on monotone row pointers
          write_matrix(path, a.rows, a.cols, a.nnz(), csr_rows<I>{a.row_ptr.data(), a.rows}, a.col_idx.data(),
                       a.values.data());
        } else if constexpr (F::name == "coo") {
          validate(a);
          write_matrix(path, a.rows, a.cols, a.nnz(), coo_rows<I>{a.row_idx.data()}, a.col_idx.data(), a.values.data());
        } else {
          fail(errc::usage, "write_mtx writes CSR or COO; convert the " + std::string(F::name) + " matrix to CSR first");
        }
      },
      m);
}

}  // namespace spconv
