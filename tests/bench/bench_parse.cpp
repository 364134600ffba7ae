// bench_parse FILE [--repeat N] [--float] [--fmm PATH]
// Times Matrix Market -> canonical CSR: read_mtx alone, coo_to_csr alone and their sum
// (min and median of N runs), and, when the fast_matrix_market anchor tool is there,
// runs it on the same file with the same thread count and prints both with the ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "convert/cpu/csr_coo.hpp"
#include "formats/parallel.hpp"
#include "io/mtx.hpp"
#include "tests/bench/bench_stats.hpp"

namespace fs = std::filesystem;
using namespace spconv;

namespace {

using bench::stats;
using bench::summarize;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void row(const char* name, const stats& s, double mb) {
  std::printf("%-24s %9.3f %9.3f %10.1f\n", name, s.min, s.median, mb / s.min);
}

// The anchor prints "fmm threads=T nnz=N SECONDS s MBPS MB/s"; its own timing (no
// process start-up) is the fair figure.
bool run_fmm(const fs::path& tool, const fs::path& file, int threads, double& secs) {
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string cmd = "'";
  cmd += tool.string();
  cmd += "' '";
  cmd += file.string();
  cmd += "' " + std::to_string(threads) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  if (pclose(p) != 0) {
    std::fprintf(stderr, "fmm-parse failed: %s", out.c_str());
    return false;
  }
  const auto at = out.find(" s ");
  if (at == std::string::npos) return false;
  const auto start = out.rfind(' ', at - 1);
  secs = std::atof(out.substr(start + 1, at - start - 1).c_str());
  return secs > 0;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path file, fmm;
  int repeat = 5;
  mtx_read_options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--fmm" && i + 1 < argc) fmm = argv[++i];
    else if (a == "--float") opt.values = value_type::f32;
    else if (!a.empty() && a[0] != '-' && file.empty()) file = a;
    else {
      std::fprintf(stderr, "usage: bench_parse FILE [--repeat N] [--float] [--fmm PATH]\n");
      return 2;
    }
  }
  if (file.empty()) {
    std::fprintf(stderr, "usage: bench_parse FILE [--repeat N] [--float] [--fmm PATH]\n");
    return 2;
  }
  if (fmm.empty()) {
    for (fs::path p : {fs::path("/work/shared/tools/fmm-parse"), fs::path("../shared/tools/fmm-parse")})
      if (fs::exists(p)) {
        fmm = p;
        break;
      }
  } else if (!fs::exists(fmm)) {
    std::fprintf(stderr, "bench_parse: %s does not exist\n", fmm.c_str());
    return 2;
  }

  try {
    std::vector<double> t_read, t_csr, t_sum, t_fmm;
    mtx_header h;
    double mb = 0;
    std::int64_t nnz = 0;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      mtx_data d = read_mtx(file, opt);
      const double tr = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      nnz = std::visit(
          [](const auto& m) -> std::int64_t {
            if constexpr (std::remove_cvref_t<decltype(m)>::name == "coo") return cpu::coo_to_csr(m).nnz();
            else return m.nnz();
          },
          d.matrix);
      const double tc = seconds_since(t0);
      t_read.push_back(tr);
      t_csr.push_back(tc);
      t_sum.push_back(tr + tc);
      h = d.header;
      mb = static_cast<double>(d.file_bytes) / 1e6;
      // Alternating the two readers gives both the same share of a busy machine.
      double s = 0;
      if (!fmm.empty() && run_fmm(fmm, file, thread_count(), s)) t_fmm.push_back(s);
    }
    std::printf("%s: %.1f MB, %lld x %lld, %lld entries stored, %lld in the CSR; %d threads, %d runs, %s values\n",
                file.c_str(), mb, static_cast<long long>(h.rows), static_cast<long long>(h.cols),
                static_cast<long long>(h.entries), static_cast<long long>(nnz), thread_count(), repeat,
                opt.values == value_type::f32 ? "float" : "double");
    std::printf("%-24s %9s %9s %10s\n", "", "min s", "median s", "MB/s (min)");
    const stats sr = summarize(t_read), sc = summarize(t_csr), ss = summarize(t_sum);
    row("read_mtx", sr, mb);
    row("coo_to_csr", sc, mb);
    row("read_mtx + coo_to_csr", ss, mb);
    if (t_fmm.size() != t_read.size()) {
      std::printf("fmm-parse %s (--fmm PATH): no comparison\n", fmm.empty() ? "not found" : "gave no timing");
      return 0;
    }
    const stats sf = summarize(t_fmm);
    row("fmm-parse (triplets)", sf, mb);
    std::printf("spconv MTX->CSR / fmm-parse: %.2f (min), %.2f (median); below 1 is faster\n", ss.min / sf.min,
                ss.median / sf.median);
  } catch (const error& e) {
    std::fprintf(stderr, "bench_parse: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}
