// model_ccoo_gathers FILE... [--scale-to N] [--l1-kib N] [--warps-per-sm N] [--sms N]
// A model, not a measurement: the share of the CCOO table warps' gathers of x that one
// multiprocessor's L1 would serve, on each matrix replicated along the diagonal (kron(I_K, A),
// as `spconv bench --scale-to`), for two ways of handing chunks to warps:
// - strided, as chunk_table_warps does (kernels/gpu/spmv_ccoo.cu): warp g takes chunks g,
//   g + W, g + 2W, ... (W warps in one resident wave), the warps of block b = g / 4 on
//   multiprocessor b % S, so a multiprocessor's warps work on chunks ~W / S * 4 chunks apart;
// - multiprocessor-local (proposed, specs/formats/ccoo.md, "SpMV"): multiprocessor s takes
//   range s of S equal ranges of chunks, its warps the next chunk in turn, so its warps work
//   on neighbouring chunks.
// Chunks are 256 groups of K entries (resolve_ccoo_params), rows padded to multiples of K as
// in the format; in each of 256 / (32 K) steps lane l takes K groups (K * K consecutive
// entries) and a warp instruction gathers entry j of every lane's K * K; the multiprocessor's
// warps issue in turn. L1 is an LRU cache of 32-byte sectors. Each walk is modelled twice:
// with each warp step's share of its chunk's sections (row offsets, pad bits, column offsets,
// table indices; the layout of formats/ccoo.hpp, the column width from the chunk's span) read
// through L1 first, as the kernel's plain loads do, and with those loads bypassing L1
// (L1::no_allocate). Padding entries (which gather x at the chunk's baseline column, one
// sector a chunk) are left out of the count. The figure is the mean over multiprocessors 0,
// S/3 and 2S/3. Prints, per matrix, whether it runs the table warps at all (every chunk a table
// chunk) and the share of x's gathers that hit.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "convert/cpu/ccoo.hpp"
#include "formats/ccoo.hpp"
#include "formats/error.hpp"
#include "io/matrix_file.hpp"

namespace fs = std::filesystem;
using namespace spconv;

namespace {

struct options {
  std::int64_t scale_to = 100000000;
  std::int64_t l1_bytes = 200 * 1024;  // H100: 256 KiB of L1 and shared memory, less the blocks' tables
  int warps_per_sm = 28;               // 7 blocks of 4 warps (68 registers a thread, K = 4, double)
  int sms = 132;
};

class sector_lru {
 public:
  explicit sector_lru(std::size_t sectors) : capacity_(sectors) {}
  void touch(std::uint64_t sector) {
    const auto it = where_.find(sector);
    if (it != where_.end()) {
      ++hits_;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    ++misses_;
    order_.push_front(sector);
    where_[sector] = order_.begin();
    if (where_.size() > capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
  }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t accesses() const { return hits_ + misses_; }

 private:
  std::size_t capacity_;
  std::list<std::uint64_t> order_;
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> where_;
  std::uint64_t hits_ = 0, misses_ = 0;
};

// One copy's entries in CCOO order (CSR order, each row padded to a multiple of k): the
// column of each (-1 for padding) and its row.
struct padded_entries {
  std::vector<std::int32_t> cols, rows;
};
padded_entries pad_rows(const csr<double, std::int32_t>& a, int k) {
  padded_entries out;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const std::int32_t lo = a.row_ptr[r], hi = a.row_ptr[r + 1];
    for (std::int32_t e = lo; e < hi; ++e) out.cols.push_back(a.col_idx[e]);
    const std::int64_t len = hi - lo, padded = k * std::max<std::int64_t>(1, (len + k - 1) / k);
    out.cols.insert(out.cols.end(), static_cast<std::size_t>(padded - len), -1);
    out.rows.insert(out.rows.end(), static_cast<std::size_t>(padded), static_cast<std::int32_t>(r));
  }
  return out;
}

// Sector keys of the blobs lie above those of x (bit 63), a chunk's blob at c * 8 KiB (a table
// chunk of 1024 entries takes at most ~6.4 KB).
constexpr std::uint64_t blob_sectors = std::uint64_t{1} << 63;
constexpr std::int64_t blob_stride = 8192;

struct model {
  const padded_entries& one;  // one copy
  std::int64_t copies, rows_per_copy, cols_per_copy;
  int k;
  const options& o;

  std::int64_t entries() const { return static_cast<std::int64_t>(one.cols.size()) * copies; }
  // Entry e of the replicated matrix: its column (-1: padding) and row.
  std::int64_t column(std::int64_t e) const {
    const auto n = static_cast<std::int64_t>(one.cols.size());
    const std::int32_t c = one.cols[static_cast<std::size_t>(e % n)];
    return c < 0 ? -1 : e / n * cols_per_copy + c;
  }
  std::int64_t row(std::int64_t e) const {
    const auto n = static_cast<std::int64_t>(one.cols.size());
    return e / n * rows_per_copy + one.rows[static_cast<std::size_t>(e % n)];
  }
  // The layout of chunk q's blob as the format stores it (a table chunk: one-byte values).
  ccoo_layout layout(std::int64_t q) const {
    const std::int64_t lo = q * chunk_entries(), hi = std::min(entries(), lo + chunk_entries());
    std::int64_t min_col = -1, max_col = -1;
    bool pads = false;
    for (std::int64_t e = lo; e < hi; ++e) {
      const std::int64_t c = column(e);
      if (c < 0) {
        pads = true;
        continue;
      }
      min_col = min_col < 0 ? c : std::min(min_col, c);
      max_col = std::max(max_col, c);
    }
    const std::int64_t span = max_col - std::max<std::int64_t>(min_col, 0);
    std::uint8_t code = ccoo_code::lut;
    if (row(lo) == row(hi - 1)) code |= ccoo_code::single_row;
    if (pads) code |= ccoo_code::pads;
    code |= static_cast<std::uint8_t>((span < 256 ? 0 : span < 65536 ? 1 : 2) << 1);
    return ccoo_chunk_layout(hi - lo, k, code, sizeof(double));
  }
  std::int64_t chunk_entries() const { return std::int64_t{256} * k; }
  std::int64_t chunks() const { return (entries() + chunk_entries() - 1) / chunk_entries(); }

  // The chunks each of the multiprocessor's warps takes, in order.
  std::vector<std::vector<std::int64_t>> chunks_of(int sm, bool local) const {
    std::vector<std::vector<std::int64_t>> mine(static_cast<std::size_t>(o.warps_per_sm));
    const std::int64_t c = chunks(), warps = std::int64_t{o.sms} * o.warps_per_sm;
    if (local) {
      const std::int64_t lo = c * sm / o.sms, hi = c * (sm + 1) / o.sms;
      for (std::int64_t q = lo; q < hi; ++q) mine[static_cast<std::size_t>((q - lo) % o.warps_per_sm)].push_back(q);
      return mine;
    }
    std::size_t w = 0;
    for (std::int64_t b = sm; b * 4 < warps; b += o.sms)
      for (std::int64_t i = 0; i < 4 && w < mine.size(); ++i, ++w)
        for (std::int64_t q = b * 4 + i; q < c; q += warps) mine[w].push_back(q);
    return mine;
  }

  // The share of the gathers of x that hit, on multiprocessor sm. With blob_in_l1 each warp's
  // step first reads its share of the chunk's sections through L1 (as the kernel's plain loads
  // do), whose sectors then compete with x's; without, those loads bypass L1
  // (L1::no_allocate). Only x's accesses are counted.
  double hit_rate(int sm, bool local, bool blob_in_l1) const {
    sector_lru l1(static_cast<std::size_t>(o.l1_bytes / 32));
    const auto mine = chunks_of(sm, local);
    std::size_t rounds = 0;
    for (const auto& v : mine) rounds = std::max(rounds, v.size());
    const int per_lane = k * k, steps = 256 / (32 * k);
    std::vector<ccoo_layout> layouts(mine.size());
    std::uint64_t x_hits = 0, x_accesses = 0;
    for (std::size_t r = 0; r < rounds; ++r) {
      for (std::size_t w = 0; w < mine.size(); ++w)
        if (r < mine[w].size() && blob_in_l1) layouts[w] = layout(mine[w][r]);
      for (int step = 0; step < steps; ++step) {
        if (blob_in_l1)
          for (std::size_t w = 0; w < mine.size(); ++w) {
            if (r >= mine[w].size()) continue;
            const ccoo_layout& l = layouts[w];
            const std::int64_t g0 = std::int64_t{step} * 32 * k, e0 = g0 * k, e1 = e0 + 32 * per_lane;
            const auto touch = [&](std::size_t from, std::size_t to) {
              const std::uint64_t base = blob_sectors + static_cast<std::uint64_t>(mine[w][r] * blob_stride);
              for (std::size_t b = from / 32; b * 32 < to; ++b) l1.touch(base + b);
            };
            if (l.pads > l.rows) touch(l.rows + static_cast<std::size_t>(g0), l.rows + static_cast<std::size_t>(g0 + 32 * k));
            if (l.cols > l.pads) touch(l.pads + static_cast<std::size_t>(e0 / 8), l.pads + static_cast<std::size_t>(e1 / 8));
            touch(l.cols + static_cast<std::size_t>(e0) * l.col_bytes, l.cols + static_cast<std::size_t>(e1) * l.col_bytes);
            touch(l.values + static_cast<std::size_t>(e0), l.values + static_cast<std::size_t>(e1));
          }
        for (int j = 0; j < per_lane; ++j)
          for (const auto& warp : mine) {
            if (r >= warp.size()) continue;
            const std::int64_t base = warp[r] * chunk_entries() + std::int64_t{step} * 32 * per_lane;
            for (int lane = 0; lane < 32; ++lane) {
              const std::int64_t e = base + std::int64_t{lane} * per_lane + j;
              if (e >= entries()) continue;
              const std::int64_t col = column(e);
              if (col < 0) continue;
              const std::uint64_t before = l1.hits();
              l1.touch(static_cast<std::uint64_t>(col) / 4);
              x_hits += l1.hits() - before;
              ++x_accesses;
            }
          }
      }
    }
    return x_accesses ? static_cast<double>(x_hits) / static_cast<double>(x_accesses) : 1.0;
  }

  double mean_hit_rate(bool local, bool blob_in_l1) const {
    double sum = 0;
    for (const int sm : {0, o.sms / 3, 2 * o.sms / 3}) sum += hit_rate(sm, local, blob_in_l1);
    return sum / 3;
  }
};

void report(const fs::path& path, const options& o) {
  matrix_file file;
  try {
    file = read_matrix_file(path);
  } catch (const error& e) {
    if (e.code() != errc::unsupported) throw;  // complex values: skipped, as by spconv bench
    std::printf("%-32s skipped: %s\n", path.filename().string().c_str(), e.what());
    return;
  }
  const auto* a = std::get_if<csr<double, std::int32_t>>(&file.matrix);
  if (!a) {
    std::printf("%-32s not a double CSR matrix: skipped\n", path.filename().string().c_str());
    return;
  }
  const ccoo<double> c = cpu::csr_to_ccoo(*a, {});
  const int k = c.params.chunk_k;
  const padded_entries one = pad_rows(*a, k);
  const std::int64_t nnz = static_cast<std::int64_t>(a->values.size());
  const std::int64_t copies = nnz > 0 && o.scale_to > nnz ? (o.scale_to + nnz - 1) / nnz : 1;
  const model m{one, copies, a->rows, a->cols, k, o};
  // gpu::ccoo_every_chunk_in_table (kernels/gpu/spmv_ccoo.hpp, CUDA builds only): a table of
  // fewer than 256 values holds every value, and only then do the table warps run alone.
  const bool warps = !c.table.empty() && c.table.size() < ccoo_table_capacity;
  std::printf("%-30s %5lld copies  K %d  %-6s  %7.1f%% %7.1f%% %7.1f%% %7.1f%%\n", path.filename().string().c_str(),
              static_cast<long long>(copies), k, warps ? "table" : "direct", 100 * m.mean_hit_rate(false, true),
              100 * m.mean_hit_rate(false, false), 100 * m.mean_hit_rate(true, true),
              100 * m.mean_hit_rate(true, false));
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "model_ccoo_gathers: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (arg == "--scale-to") o.scale_to = value();
    else if (arg == "--l1-kib") o.l1_bytes = value() * 1024;
    else if (arg == "--warps-per-sm") o.warps_per_sm = static_cast<int>(value());
    else if (arg == "--sms") o.sms = static_cast<int>(value());
    else if (fs::is_directory(arg)) {
      for (const auto& e : fs::directory_iterator(arg))
        if (e.path().extension() == ".mtx") files.push_back(e.path());
    } else files.emplace_back(arg);
  }
  if (files.empty() || o.l1_bytes < 32 || o.warps_per_sm < 1 || o.sms < 1) {
    std::fprintf(stderr,
                 "usage: model_ccoo_gathers FILE|DIR... [--scale-to N] [--l1-kib N] [--warps-per-sm N] [--sms N]\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  std::printf("L1 model of the CCOO table warps' gathers of x (%lld KiB of 32-byte sectors, LRU; %d warps on each "
              "of %d multiprocessors; replicated to >= %lld entries): x sector hit rate\n",
              static_cast<long long>(o.l1_bytes / 1024), o.warps_per_sm, o.sms, static_cast<long long>(o.scale_to));
  std::printf("%-30s %-26s %-17s %s\n", "", "", "strided walk", "multiprocessor-local walk");
  std::printf("%-30s %-26s %8s %8s %8s %8s\n", "matrix", "", "blob L1", "no blob", "blob L1", "no blob");
  try {
    for (const auto& f : files) report(f, o);
  } catch (const error& e) {
    std::fprintf(stderr, "model_ccoo_gathers: %s\n", e.what());
    return 1;
  }
}
