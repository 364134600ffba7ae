// The automatic format choice (`spconv IN --to auto OUT`, the recommendation `spconv info`
// prints): the format expected to give the fastest SpMV for a matrix on a CPU or a GPU,
// picked from the structure statistics of its CSR by a short decision list. The rule, its
// thresholds, the measurements they rest on and its limits: specs/select_format.md.
//
// A heuristic, not a measurement: it ranks formats by the bytes each SpMV kernel must read
// and by what the kernels reached in this project's benchmarks (README "Benchmarks"); a
// matrix can run fastest in another format. `--to FORMAT` overrides it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/any_matrix.hpp"

namespace spconv {

enum class spmv_device { cpu, gpu };

inline std::string_view to_string(spmv_device d) { return d == spmv_device::cpu ? "cpu" : "gpu"; }

// The thresholds of the decision lists, each with the reason it has this value
// (specs/select_format.md repeats them with the measurements).
namespace selection {

// GPU: a CSR below this many bytes is launch-bound. At the H100's ~3 TB/s, 16 MiB stream in
// ~6 us, the cost of two or three kernel launches; cuSPARSE takes ~15 us per SpMV on each
// matrix of ../shared/matrices/real as it is (<= 0.6M entries, <= 7 MB; issue 5). Below it
// the number of launches and the longest thread decide, not the bytes read; 16 MiB with x
// and y also stays inside the H100's 50 MB L2 cache, so repeated SpMVs do not even read DRAM.
inline constexpr std::uint64_t gpu_launch_bound_bytes = std::uint64_t{16} << 20;

// GPU, launch-bound matrices: a row is "long" when it has at least this many entries and at
// least gpu_long_row_over_mean times the mean. The CSR kernel gives a row to one thread (or
// one warp; CSR-scalar / CSR-vector, liu-thesis-csr5.txt sec. 8.3.1) and a launch lasts as
// long as its slowest thread: 256 steps of an L2 access each take microseconds, as long as
// the whole launch of a small matrix, and 32 x the mean is a whole warp's work in one lane.
// The thesis's irregular matrices (Table 8.4: dc2, ASIC_680k, ...) all have such rows, and
// there row-block kernels collapse while CSR5, which cuts the entries into equal tiles,
// does not (sec. 8.5.2, Fig. 8.13).
inline constexpr std::int64_t gpu_long_row_min_entries = 256;
inline constexpr double gpu_long_row_over_mean = 32.0;

// GPU: CCOO's value table (formats/ccoo.hpp, bccoo-aliaga-anzt.txt Sect. 2) replaces each
// value by a 1-byte index, but only in chunks whose every value is in the table. With a
// share u of entries outside the table, spread at random, a chunk of B*K = 1024 entries
// (256 x 4) keeps the table with probability (1 - u)^1024: 0.90 at u = 1e-4. With the table
// CCOO reads at most about 1 + 4 + 1 + 1/8 bytes per entry (value index, 32-bit column
// offset, row offset, pad bit) against CSR's 12 in double, 0.51x; its kernel reached 46.5%
// of copy bandwidth (README) against HYB's 84.2%, so it wins below 0.55x. Measured: CCOO
// is the fastest kernel in geometric mean, 1.09x cuSPARSE, on a set where most matrices
// have few distinct values (pattern and integer matrices).
inline constexpr double gpu_ccoo_min_table_share = 0.9999;

// GPU, not launch-bound: rows shorter than this on average, without a long row, go to CSR,
// whose kernel gives each such row one thread (csr_scalar_below, kernels/gpu/spmv.hpp) and
// reads CSR's bytes at up to 97% of the copy bandwidth there. Measured on the H100 (stop 10,
// ../shared/matrices/real replicated to 100M entries): CSR was the fastest format on every
// matrix with a mean below 5 and no long row (add32 4.8, bcspwr10 4.1, luxembourg 2.1: 1.05-1.09x
// CCOO), and not on any with a mean from 6.3 up; 5.5 lies between. Since stop 31 a value table
// that covers the matrix decides first: bcspwr10 and luxembourg (one distinct value) ran faster
// in CCOO than in CSR in each of stops 29-31 (1.27x, 1.38x, 1.43x against 1.21-1.22x; 1.35-1.36x
// against 1.34-1.35x), once CCOO's table warps took the chunks of table values.
inline constexpr double gpu_short_row_mean = 5.5;

// GPU: CCOO stores a chunk's column offsets in 1, 2 or 4 bytes (the chunk's column span).
// With at most 2 bytes on average over windows of 1024 consecutive entries (the automatic
// 256 x 4 chunk), CCOO reads at most about 8 + 2 + 0.4 bytes per entry in double without its
// value table, 0.87x CSR's 12, and its kernel (persistent blocks, whole-group loads) ran at
// 1.23x cuSPARSE in geometric mean: it was the fastest format on all seven such matrices of
// the measured set whose value table does not cover them (Groebner, bayer10, bcsstk13,
// fidapex6, hangGlider_2, memplus, zenios; 1.06-1.38x the row formats). With 4-byte offsets
// and 8-byte values it reads more than CSR and the row formats decide.
inline constexpr double gpu_ccoo_max_offset_bytes = 2.0;

// GPU: the share of the device copy bandwidth each kernel reached over its format's bytes
// plus x and y (README "Benchmarks": H100, double, geometric mean over
// ../shared/matrices/real replicated to >= 100M entries, stop 16: HYB's 4-slot ELL loop,
// CSR5's taller tiles for short rows; stop 13's were 84.1% and 79.0%). HYB's bytes count its
// ELL padding, CSR5's its tile descriptors; the rule compares estimated bytes / share.
inline constexpr double gpu_hyb_copy_share = 0.903;
inline constexpr double gpu_csr5_copy_share = 0.890;

// CPU: no threshold of its own. BCSR is picked exactly when cpu::resolve_bcsr_params picks
// blocks larger than 1 x 1, which it does only when they make BCSR's arrays smaller than
// 1 x 1 blocks (= CSR's): the reference BCSR SpMV then reads one column index per block and
// keeps the block row's sums in registers (mbr-kannan.txt sec. II, Fig. 2). In our CPU
// measurements such matrices ran at 0.72-0.98x CSR's time, also at 0.9-0.98x CSR's bytes
// (specs/select_format.md, "Measurements behind the rule"); with 1 x 1 blocks BCSR is CSR.

}  // namespace selection

// The statistics the rule read. The first group is always filled; the optional ones only
// when a step of the decision list needed them (a rule that stopped early did not compute
// the rest).
struct selection_stats {
  std::int64_t rows = 0, cols = 0, nnz = 0;
  double row_mean = 0, row_stddev = 0;
  std::int64_t row_max = 0, empty_rows = 0;
  std::uint64_t csr_bytes = 0;  // CSR arrays with the matrix's value type and 32-bit indices

  // Value repetition (GPU): CCOO's value table, min(256, distinct values) entries
  // (ccoo_value_table), and the share of the entries whose value is in it.
  std::optional<std::int64_t> table_values;
  std::optional<double> table_share;
  // CCOO's column offsets (GPU): the mean width in bytes (1, 2 or 4) over windows of 1024
  // consecutive entries, each window's width given by its column span.
  std::optional<double> ccoo_offset_bytes;

  // HYB and CSR5 byte estimates (GPU), each counting x and y once.
  std::optional<std::int64_t> hyb_ell_width;  // cpu::hyb_auto_ell_width; absent when HYB cannot hold the matrix
  std::optional<std::int64_t> hyb_tail;       // entries in HYB's COO tail
  std::optional<std::uint64_t> hyb_bytes;
  std::optional<std::uint64_t> csr5_bytes;

  // Block fill (CPU): the BCSR block size cpu::resolve_bcsr_params picks, its block count,
  // entries per stored value and BCSR's bytes.
  std::optional<bcsr_params> bcsr_block;
  std::optional<std::int64_t> bcsr_blocks;
  std::optional<double> bcsr_fill;
  std::optional<std::uint64_t> bcsr_bytes;
};

struct format_choice {
  std::string format;  // a name of format_list
  std::string reason;  // one sentence naming the deciding statistic
  std::string step;    // the step of the decision list that decided (specs/select_format.md)
  spmv_device device = spmv_device::gpu;
  selection_stats stats;
};

// The format expected to give the fastest SpMV of `m` on `d`. Any stored format: the
// statistics come from its CSR (converted when `m` is not CSR), so every format of one
// matrix gets the same choice. Deterministic (the statistics do not depend on the thread
// count). Costs a few passes over the matrix; when it picks BCSR, also one CSR -> BCSR
// conversion (whose block count it reports).
format_choice select_format(const any_matrix& m, spmv_device d);

// One or two lines for `spconv info`: "gpu: csr5 (reason)".
std::string describe_choice(const format_choice& c);

// The statistics of `c` that were computed, as (name, value) in the order above: for JSON.
std::vector<std::pair<std::string, double>> choice_statistics(const format_choice& c);

}  // namespace spconv
