// bench_load [--dir DIR] [--repeat N] [--rows-grid G] [--threads T] [--staging-kib K]
// File -> device loading of one large matrix (issue 7, item 2): a 3D 27-point stencil on a
// G^3 grid (default 160: 4.1M rows, 109M entries, float64 values, int32 indices), generated
// in-process with deterministic pseudo-random values, written as Matrix Market and as csr
// containers (zstd and uncompressed) into DIR (default: a temporary directory, removed at the
// end), then timed, min and median of N runs (default 3), each path until the matrix is in
// device memory (T: decoding threads of (c) and (d), default all; K: their staging buffer size):
//   (a) read_matrix_file (MTX parse + canonical CSR) + to_device: the text path;
//   (b) read_container + to_device: the container through HDF5, then whole-array copies;
//   (c) load_container_to_device of the zstd container;
//   (d) load_container_to_device of the uncompressed container.
// Each loaded matrix is checked bit for bit against the generated one. The files were just
// written, so the page cache holds them (warm reads: nothing is dropped, which needs root).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#ifdef SPCONV_HAVE_CUDA
#include <cuda_runtime.h>
#include <unistd.h>

#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"
#include "formats/parallel.hpp"
#include "io/hdf5/container.hpp"
#include "io/hdf5/device_load.hpp"
#include "io/matrix_file.hpp"
#include "io/mtx.hpp"
#include "tests/bench/bench_stats.hpp"

namespace fs = std::filesystem;
using namespace spconv;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

using bench::stats;
using bench::summarize;

// A value in [-1, 1) from the entry's position: deterministic, different for every entry,
// incompressible in its low mantissa bits like measured data.
double entry_value(std::uint64_t k) {
  std::uint64_t z = k + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

// The 27-point stencil on a g^3 grid, row (z * g + y) * g + x: every neighbour within one step
// in each direction, columns increasing within a row (canonical CSR).
csr<double, std::int32_t> stencil(std::int64_t g) {
  const std::int64_t rows = g * g * g;
  const std::int64_t per_dim = 3 * g - 2;  // neighbours summed over one dimension
  const std::int64_t nnz = per_dim * per_dim * per_dim;
  if (nnz > INT32_MAX) {
    std::fprintf(stderr, "bench_load: grid %lld gives %lld entries, beyond int32 indices\n", static_cast<long long>(g),
                 static_cast<long long>(nnz));
    std::exit(2);
  }
  auto span = [g](std::int64_t i) { return 3 - (i == 0) - (i == g - 1); };
  csr<double, std::int32_t> a;
  a.rows = a.cols = rows;
  a.row_ptr.resize(rows + 1);
  a.col_idx.resize(nnz);
  a.values.resize(nnz);
  a.row_ptr[0] = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    a.row_ptr[r + 1] = a.row_ptr[r] + static_cast<std::int32_t>(span(r % g) * span(r / g % g) * span(r / (g * g)));
  parallel_for(rows, 1 << 14, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t x = r % g, y = r / g % g, z = r / (g * g);
      std::int64_t k = a.row_ptr[r];
      for (std::int64_t dz = -1; dz <= 1; ++dz)
        for (std::int64_t dy = -1; dy <= 1; ++dy)
          for (std::int64_t dx = -1; dx <= 1; ++dx) {
            if (z + dz < 0 || z + dz >= g || y + dy < 0 || y + dy >= g || x + dx < 0 || x + dx >= g) continue;
            a.col_idx[k] = static_cast<std::int32_t>(r + (dz * g + dy) * g + dx);
            a.values[k] = entry_value(static_cast<std::uint64_t>(k));
            ++k;
          }
    }
  });
  return a;
}

double gb(double bytes) { return bytes / 1e9; }

// The host -> device copy rate from pinned memory: the ceiling of a load that is not bound by
// reading or decoding.
double pinned_copy_rate(gpu_context& ctx) {
  const std::size_t bytes = std::size_t{256} << 20;
  void* host = nullptr;
  void* dev = nullptr;
  check_cuda(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), "pinned buffer");
  check_cuda(cudaMalloc(&dev, bytes), "device buffer");
  std::memset(host, 1, bytes);
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  std::vector<double> t;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = clock_type::now();
    check_cuda(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream), "copy");
    ctx.synchronize();
    if (r > 0) t.push_back(seconds_since(t0));  // the first run warms up
  }
  cudaFree(dev);
  cudaFreeHost(host);
  return static_cast<double>(bytes) / summarize(t).median;
}

void row(const char* name, const stats& s, double bytes) {
  std::printf("%-36s %8.3f %9.3f %9.2f\n", name, s.min, s.median, gb(bytes) / s.median);
}

// The temporary directory when no --dir is given: removed at the end, also after an error.
struct scratch_dir {
  fs::path path;
  bool temporary = false;
  ~scratch_dir() {
    std::error_code ec;
    if (temporary) fs::remove_all(path, ec);
  }
};

void check_equal(const char* what, const csr<double, std::int32_t>& loaded, const csr<double, std::int32_t>& a) {
  if (!equal(loaded, a)) {
    std::fprintf(stderr, "bench_load: %s: the loaded matrix differs from the generated one\n", what);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir;
  int repeat = 3, threads = 0;
  std::size_t staging_kib = device_load_options{}.staging_buffer_bytes >> 10;
  std::int64_t grid = 160;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (arg == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--rows-grid" && i + 1 < argc) grid = std::max(2, std::atoi(argv[++i]));
    else if (arg == "--threads" && i + 1 < argc) threads = std::max(0, std::atoi(argv[++i]));
    else if (arg == "--staging-kib" && i + 1 < argc) staging_kib = static_cast<std::size_t>(std::max(64, std::atoi(argv[++i])));
    else {
      std::fprintf(stderr, "usage: bench_load [--dir DIR] [--repeat N] [--rows-grid G] [--threads T] [--staging-kib K]\n");
      return 2;
    }
  }
  if (!gpu_available()) {
    std::fprintf(stderr, "bench_load: no GPU\n");
    return 1;
  }
  scratch_dir scratch;
  try {
    if (dir.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "bench_load-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) {
        std::perror("bench_load: mkdtemp");
        return 1;
      }
      dir = scratch.path = tmpl;
      scratch.temporary = true;
    }
    fs::create_directories(dir);
    gpu_context ctx;

    auto t0 = clock_type::now();
    const csr<double, std::int32_t> a = stencil(grid);
    const double array_bytes = static_cast<double>(bytes(a));
    std::printf("bench_load: 3D 27-point stencil, grid %lld^3: %lld rows, %lld entries, float64/int32, arrays %.3f GB "
                "(generated in %.1f s)\n",
                static_cast<long long>(grid), static_cast<long long>(a.rows), static_cast<long long>(a.nnz()),
                gb(array_bytes), seconds_since(t0));

    const fs::path mtx = dir / "stencil.mtx", zstd = dir / "stencil_zstd.h5", none = dir / "stencil_none.h5";
    t0 = clock_type::now();
    write_mtx(mtx, a);
    const double mtx_write = seconds_since(t0);
    write_options wo;
    wo.force = true;
    wo.comp = {true, 3};
    t0 = clock_type::now();
    write_container(zstd, {a}, {}, wo);
    const double zstd_write = seconds_since(t0);
    wo.comp = {false, 3};
    t0 = clock_type::now();
    write_container(none, {a}, {}, wo);
    const double none_write = seconds_since(t0);
    std::printf("files in %s, just written (warm page cache; no cache dropped):\n", dir.c_str());
    std::printf("  %-16s %7.3f GB  (written in %.1f s)\n", "stencil.mtx", gb(fs::file_size(mtx)), mtx_write);
    std::printf("  %-16s %7.3f GB  (written in %.1f s)\n", "stencil_zstd.h5", gb(fs::file_size(zstd)), zstd_write);
    std::printf("  %-16s %7.3f GB  (written in %.1f s)\n", "stencil_none.h5", gb(fs::file_size(none)), none_write);
    std::printf("device: %s; host threads: %d; pinned host -> device copy rate: %.1f GB/s\n", device_name(ctx.device()).c_str(),
                threads > 0 ? threads : thread_count(), gb(pinned_copy_rate(ctx)));

    device_load_options opt;
    opt.threads = threads;
    opt.staging_buffer_bytes = staging_kib << 10;
    device_load_stats zstd_stats, none_stats;
    std::vector<double> ta, tb, tc, td;
    for (int r = 0; r < repeat; ++r) {
      // Each path until the matrix is in device memory; freeing it is not timed.
      {
        const auto s = clock_type::now();
        const matrix_file f = read_matrix_file(mtx);
        const auto d = to_device(std::get<csr<double, std::int32_t>>(f.matrix));
        ctx.synchronize();
        ta.push_back(seconds_since(s));
        if (r == 0) check_equal("(a)", to_host(d), a);
      }
      {
        const auto s = clock_type::now();
        const any_matrix m = read_container(zstd, "csr");
        const auto d = to_device(std::get<csr<double, std::int32_t>>(m));
        ctx.synchronize();
        tb.push_back(seconds_since(s));
        if (r == 0) check_equal("(b)", to_host(d), a);
      }
      for (const bool z : {true, false}) {
        opt.stats = z ? &zstd_stats : &none_stats;
        const auto s = clock_type::now();
        const any_device_matrix d = load_container_to_device(z ? zstd : none, "csr", ctx, opt);
        ctx.synchronize();
        (z ? tc : td).push_back(seconds_since(s));
        if (r == 0) check_equal(z ? "(c)" : "(d)", to_host(std::get<csr<double, std::int32_t, device>>(d)), a);
      }
    }
    const stats sa = summarize(ta), sb = summarize(tb), sc = summarize(tc), sd = summarize(td);
    std::printf("\n%d runs                                  min s  median s  GB/s (median, array bytes / time)\n", repeat);
    row("(a) MTX parse + CSR + to_device", sa, array_bytes);
    row("(b) read_container + to_device", sb, array_bytes);
    row("(c) load_container_to_device zstd", sc, array_bytes);
    row("(d) load_container_to_device none", sd, array_bytes);
    std::printf("(a) / (c) = %.1f, (a) / (d) = %.1f (medians); (b) / (c) = %.1f\n", sa.median / sc.median,
                sa.median / sd.median, sb.median / sc.median);
    // The context pins its staging memory on its first load (the zstd one of run 1), which a
    // process that loads one matrix pays once.
    std::printf("first run: (c) %.3f s (pins the context's staging memory), (d) %.3f s; (a) / first (c) = %.1f\n",
                tc.front(), td.front(), sa.median / tc.front());
    for (const bool z : {true, false}) {
      const device_load_stats& st = z ? zstd_stats : none_stats;
      std::printf("%s load (last run): %d threads, %llu chunks, %d datasets decoded by spconv, %d by HDF5, "
                  "%.1f MB pinned staging; checks %.4f s, staging %.4f s, transfer %.4f s\n",
                  z ? "zstd" : "none", st.threads, static_cast<unsigned long long>(st.chunks), st.datasets_decoded,
                  st.datasets_through_hdf5, static_cast<double>(st.staging_bytes) / 1e6, st.check_seconds,
                  st.staging_seconds, st.transfer_seconds);
    }
  } catch (const error& e) {
    std::fprintf(stderr, "bench_load: %s\n", e.what());
    return 1;
  }
  return 0;
}

#else
int main() {
  std::puts("bench_load: built without CUDA");
  return 0;
}
#endif
