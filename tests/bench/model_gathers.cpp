// model_gathers FILE|DIR... [--kernel ccoo|hola] [--scale-to N] [--l1-kib N] [--workers N] [--sms N]
// A model, not a measurement: the share of a GPU SpMV kernel's gathers of x that one
// multiprocessor's L1 would serve, on each matrix replicated along the diagonal (kron(I_K, A),
// as `spconv bench --scale-to`), for two ways of handing the kernel's units of work (CCOO table
// warps: chunks; HOLA: blocks' tiles) to the multiprocessors:
// - as the kernel does now. CCOO (chunk_table_warps, kernels/gpu/spmv_ccoo.cu): warp g takes
//   chunks g, g + W, g + 2W, ... (W warps in one resident wave), the warps of block b = g / 4
//   on multiprocessor b % S. HOLA (hola_core, kernels/gpu/spmv_csr_hola.cu): a block per tile
//   of 2048 entries, the blocks dealt to the multiprocessors in turn, so multiprocessor s runs
//   tiles s, s + S, s + 2S, ..., `workers` of them at once;
// - multiprocessor-local (proposed, specs/formats/ccoo.md, "Next"): multiprocessor s takes
//   range s of S equal ranges of units, its workers the next unit in turn, so that it works on
//   neighbouring units.
// Within a unit the gathers follow the kernel's order, the multiprocessor's warps issuing in
// turn. CCOO: chunks of 256 groups of K entries (resolve_ccoo_params), rows padded to multiples
// of K as in the format; in each of 256 / (32 K) steps lane l takes K groups (K * K
// consecutive entries) and a warp instruction gathers entry j of every lane's K * K. HOLA: the
// block's 8 warps load 512 consecutive entries at a time, lane l of warp w entries 64 w + 2 l
// and 64 w + 2 l + 1, one gather instruction each. L1 is an LRU cache of 32-byte sectors. Each
// walk is modelled twice: with each step's (CCOO: the warp's share of its chunk's sections,
// the layout of formats/ccoo.hpp, the column width from the chunk's span; HOLA: the 512
// entries' col_idx and values) read through L1 first, as the kernels' plain loads do, and with
// those loads bypassing L1 (L1::no_allocate). CCOO's padding entries (which gather x at the
// chunk's baseline column, one sector a chunk) are left out of the count. The figure is the
// mean over multiprocessors 0, S/3 and 2S/3.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <list>
#include <string>
#include <system_error>
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
  bool ccoo = true;  // --kernel ccoo (the table warps) or hola
  std::int64_t scale_to = 100000000;
  std::int64_t l1_bytes = 0;  // 0: the kernel's (below)
  int workers = 0;            // units a multiprocessor works on at once; 0: the kernel's
  int sms = 132;
};

// H100 (256 KiB of L1 and shared memory a multiprocessor). CCOO's table warps: 7 blocks of 4
// warps (68 registers a thread, the K = 4 double kernel, taken for every K), 2 KiB of table a
// block, so about 200 KiB of L1. HOLA: 6 blocks (its __launch_bounds__), each staging 2048
// products, its row buffer and its rows' ends and bits in ~20.3 KiB of shared memory (128 KiB
// with the 1 KiB the hardware reserves a block: the 132 KiB carve-out), so about 124 KiB of L1.
void kernel_defaults(options& o) {
  if (o.l1_bytes == 0) o.l1_bytes = (o.ccoo ? 200 : 124) * 1024;
  if (o.workers == 0) o.workers = o.ccoo ? 28 : 6;
}

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

// One copy's entries in CCOO order (CSR order, each row padded to a multiple of k, an empty row
// to one group, as csr_to_ccoo's row_groups; k = 0: CSR as it is): the column of each (-1 for
// padding) and its row.
struct padded_entries {
  std::vector<std::int32_t> cols, rows;
};
padded_entries pad_rows(const csr<double, std::int32_t>& a, int k) {
  padded_entries out;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const std::int32_t lo = a.row_ptr[r], hi = a.row_ptr[r + 1];
    for (std::int32_t e = lo; e < hi; ++e) out.cols.push_back(a.col_idx[e]);
    const std::int64_t len = hi - lo, padded = k == 0 ? len : k * std::max<std::int64_t>(1, (len + k - 1) / k);
    out.cols.insert(out.cols.end(), static_cast<std::size_t>(padded - len), -1);
    out.rows.insert(out.rows.end(), static_cast<std::size_t>(padded), static_cast<std::int32_t>(r));
  }
  return out;
}

// Sector keys of what a kernel streams lie above those of x: CCOO's blobs (a chunk's at
// c * 8 KiB: a table chunk of 1024 entries takes at most ~6.4 KB), HOLA's col_idx and values.
constexpr std::uint64_t blob_sectors = std::uint64_t{1} << 63;
constexpr std::uint64_t col_idx_sectors = std::uint64_t{1} << 62;
constexpr std::uint64_t value_sectors = std::uint64_t{1} << 61;
constexpr std::int64_t blob_stride = 8192;
// HOLA's tile (hola_entries_per_block, kernels/gpu/spmv_csr_hola.hpp, CUDA builds only), the
// entries its block loads at a time and its warps.
constexpr std::int64_t hola_tile = 2048, hola_step = 512;
constexpr int hola_warps = 8;

// The units each of a multiprocessor's workers takes, in order.
std::vector<std::vector<std::int64_t>> units_of(std::int64_t units, int sm, bool local, bool ccoo, const options& o) {
  std::vector<std::vector<std::int64_t>> mine(static_cast<std::size_t>(o.workers));
  if (local) {
    const std::int64_t lo = units * sm / o.sms, hi = units * (sm + 1) / o.sms;
    for (std::int64_t q = lo; q < hi; ++q) mine[static_cast<std::size_t>((q - lo) % o.workers)].push_back(q);
  } else if (ccoo) {  // warp g takes g, g + W, ...; blocks of 4 warps, block b on b % S
    const std::int64_t warps = std::int64_t{o.sms} * o.workers;
    std::size_t w = 0;
    for (std::int64_t b = sm; b * 4 < warps; b += o.sms)
      for (std::int64_t i = 0; i < 4 && w < mine.size(); ++i, ++w)
        for (std::int64_t q = b * 4 + i; q < units; q += warps) mine[w].push_back(q);
  } else {  // the i-th block multiprocessor sm receives is block sm + i S; `workers` at once
    for (std::int64_t i = 0; sm + i * o.sms < units; ++i)
      mine[static_cast<std::size_t>(i % o.workers)].push_back(sm + i * o.sms);
  }
  return mine;
}

struct model {
  const padded_entries& one;  // one copy
  std::int64_t copies, rows_per_copy, cols_per_copy;
  int k;  // CCOO's K; 0 for HOLA
  const options& o;

  bool ccoo() const { return k > 0; }
  std::int64_t entries() const { return static_cast<std::int64_t>(one.cols.size()) * copies; }
  std::int64_t unit_entries() const { return ccoo() ? std::int64_t{256} * k : hola_tile; }
  std::int64_t units() const { return (entries() + unit_entries() - 1) / unit_entries(); }
  int steps() const { return ccoo() ? 256 / (32 * k) : static_cast<int>(hola_tile / hola_step); }
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
    const std::int64_t lo = q * unit_entries(), hi = std::min(entries(), lo + unit_entries());
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

  // What unit q's step reads once, as sector keys: CCOO the warp's share of the chunk's sections
  // (row offsets, pad bits, column offsets, table indices), HOLA the step's col_idx and values.
  template <class F>
  void stream(std::int64_t q, const ccoo_layout& l, int step, F&& touch) const {
    const auto span = [&](std::uint64_t region, std::int64_t from, std::int64_t to) {
      for (std::int64_t b = from / 32; b * 32 < to; ++b) touch(region + static_cast<std::uint64_t>(b));
    };
    if (!ccoo()) {
      const std::int64_t e0 = q * hola_tile + std::int64_t{step} * hola_step, e1 = std::min(entries(), e0 + hola_step);
      span(col_idx_sectors, 4 * e0, 4 * e1);
      span(value_sectors, 8 * e0, 8 * e1);
      return;
    }
    const std::uint64_t blob = blob_sectors + static_cast<std::uint64_t>(q * blob_stride / 32);
    const auto at = [](std::size_t section, std::int64_t offset) { return static_cast<std::int64_t>(section) + offset; };
    const std::int64_t g0 = std::int64_t{step} * 32 * k, e0 = g0 * k, e1 = e0 + 32 * k * k;
    const auto cb = static_cast<std::int64_t>(l.col_bytes);
    if (l.pads > l.rows) span(blob, at(l.rows, g0), at(l.rows, g0 + 32 * k));
    if (l.cols > l.pads) span(blob, at(l.pads, e0 / 8), at(l.pads, (e1 + 7) / 8));
    span(blob, at(l.cols, e0 * cb), at(l.cols, e1 * cb));
    span(blob, at(l.values, e0), at(l.values, e1));
  }

  // The step's gather instructions, each the entries of 32 lanes (from the unit's first).
  template <class F>
  void gathers(int step, F&& instruction) const {
    std::int64_t lanes[32];
    if (ccoo()) {
      const int per_lane = k * k;
      for (int j = 0; j < per_lane; ++j) {
        for (int l = 0; l < 32; ++l) lanes[l] = std::int64_t{step} * 32 * per_lane + std::int64_t{l} * per_lane + j;
        instruction(lanes);
      }
      return;
    }
    for (int w = 0; w < hola_warps; ++w)
      for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 32; ++l) lanes[l] = std::int64_t{step} * hola_step + 64 * w + 2 * l + h;
        instruction(lanes);
      }
  }

  // The share of the gathers of x that hit, on multiprocessor sm; with streams_in_l1 each
  // step's stream goes through L1 before its gathers. Only x's accesses are counted.
  double hit_rate(int sm, bool local, bool streams_in_l1) const {
    sector_lru l1(static_cast<std::size_t>(o.l1_bytes / 32));
    const auto mine = units_of(units(), sm, local, ccoo(), o);
    std::size_t rounds = 0;
    for (const auto& v : mine) rounds = std::max(rounds, v.size());
    std::vector<ccoo_layout> layouts(mine.size());
    std::uint64_t x_hits = 0, x_accesses = 0;
    for (std::size_t r = 0; r < rounds; ++r) {
      if (ccoo() && streams_in_l1)
        for (std::size_t w = 0; w < mine.size(); ++w)
          if (r < mine[w].size()) layouts[w] = layout(mine[w][r]);
      for (int step = 0; step < steps(); ++step) {
        if (streams_in_l1)
          for (std::size_t w = 0; w < mine.size(); ++w)
            if (r < mine[w].size()) stream(mine[w][r], layouts[w], step, [&](std::uint64_t key) { l1.touch(key); });
        gathers(step, [&](const std::int64_t* lanes) {
          for (const auto& worker : mine) {
            if (r >= worker.size()) continue;
            for (int l = 0; l < 32; ++l) {
              const std::int64_t e = worker[r] * unit_entries() + lanes[l];
              if (e >= entries() || lanes[l] >= unit_entries()) continue;
              const std::int64_t col = column(e);
              if (col < 0) continue;
              const std::uint64_t before = l1.hits();
              l1.touch(static_cast<std::uint64_t>(col) / 4);
              x_hits += l1.hits() - before;
              ++x_accesses;
            }
          }
        });
      }
    }
    return x_accesses ? static_cast<double>(x_hits) / static_cast<double>(x_accesses) : 1.0;
  }

  double mean_hit_rate(bool local, bool streams_in_l1) const {
    double sum = 0;
    for (const int sm : {0, o.sms / 3, 2 * o.sms / 3}) sum += hit_rate(sm, local, streams_in_l1);
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
  // CCOO's K and whether the table warps run at all (gpu::ccoo_every_chunk_in_table,
  // kernels/gpu/spmv_ccoo.hpp, CUDA builds only: a table of fewer than 256 values holds every
  // value, and only then do the table warps run alone); HOLA reads the CSR as it is (k = 0).
  int k = 0;
  const char* runs = "";
  if (o.ccoo) {
    const ccoo<double> c = cpu::csr_to_ccoo(*a, {});
    k = c.params.chunk_k;
    runs = !c.table.empty() && c.table.size() < ccoo_table_capacity ? "table" : "direct";
  }
  const padded_entries one = pad_rows(*a, k);
  const std::int64_t nnz = static_cast<std::int64_t>(a->values.size());
  const std::int64_t copies = nnz > 0 && o.scale_to > nnz ? (o.scale_to + nnz - 1) / nnz : 1;
  const model m{one, copies, a->rows, a->cols, k, o};
  const std::string what = o.ccoo ? "K " + std::to_string(k) + "  " + runs : "";
  std::printf("%-30s %5lld copies  %-11s %7.1f%% %7.1f%% %7.1f%% %7.1f%%\n", path.filename().string().c_str(),
              static_cast<long long>(copies), what.c_str(), 100 * m.mean_hit_rate(false, true),
              100 * m.mean_hit_rate(false, false), 100 * m.mean_hit_rate(true, true),
              100 * m.mean_hit_rate(true, false));
}

// A flag's value: a whole number in [1, most], else a usage error (exit 2).
std::int64_t positive(const std::string& flag, const char* text, std::int64_t most) {
  std::int64_t v = 0;
  const char* end = text + std::strlen(text);
  const auto [p, ec] = std::from_chars(text, end, v);
  if (ec != std::errc{} || p != end || v < 1 || v > most) {
    std::fprintf(stderr, "model_gathers: %s takes a whole number from 1 to %lld, not '%s'\n", flag.c_str(),
                 static_cast<long long>(most), text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  std::vector<fs::path> files;
  bool usage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "model_gathers: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--kernel") {
      const std::string k = value();
      usage |= k != "ccoo" && k != "hola";
      o.ccoo = k == "ccoo";
    } else if (arg == "--scale-to") o.scale_to = positive(arg, value(), std::int64_t{1} << 40);
    else if (arg == "--l1-kib") o.l1_bytes = positive(arg, value(), std::int64_t{1} << 20) * 1024;
    else if (arg == "--workers") o.workers = static_cast<int>(positive(arg, value(), 1 << 16));
    else if (arg == "--sms") o.sms = static_cast<int>(positive(arg, value(), 1 << 16));
    else if (fs::is_directory(arg)) {
      for (const auto& e : fs::directory_iterator(arg))
        if (e.path().extension() == ".mtx") files.push_back(e.path());
    } else files.emplace_back(arg);
  }
  kernel_defaults(o);
  if (usage || files.empty()) {
    std::fprintf(stderr, "usage: model_gathers FILE|DIR... [--kernel ccoo|hola] [--scale-to N] [--l1-kib N] "
                         "[--workers N] [--sms N]\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  std::printf("L1 model of the %s gathers of x (%lld KiB of 32-byte sectors, LRU; %d %s on each of %d "
              "multiprocessors; replicated to >= %lld entries): the share of x's sector reads that hit\n",
              o.ccoo ? "CCOO table warps'" : "HOLA kernel's", static_cast<long long>(o.l1_bytes / 1024), o.workers,
              o.ccoo ? "warps" : "blocks", o.sms, static_cast<long long>(o.scale_to));
  std::printf("%-30s %-25s %-17s %s\n", "", "", "as now", "multiprocessor-local");
  std::printf("%-30s %-25s %8s %8s %8s %8s\n", "matrix", "", "streams", "bypass", "streams", "bypass");
  try {
    for (const auto& f : files) report(f, o);
  } catch (const error& e) {
    std::fprintf(stderr, "model_gathers: %s\n", e.what());
    return 1;
  }
}
