// bench_convert [INPUT...] [--shared DIR] [--repeat N] [--csr5-for cpu|gpu] [--json FILE]
// CPU conversion cost of every format, in units of the CSR reference SpMV on the same
// matrix (how many SpMVs a conversion must save to pay for itself). INPUT: Matrix Market
// files or directories of them (default: DIR/matrices/real, DIR the shared folder beside
// the source tree). Per matrix (read as double CSR): the CSR SpMV, then per format CSR -> X,
// X -> CSR and X's own SpMV, each the median of N runs after one warm-up run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/graph.hpp"
#include "formats/parallel.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv.hpp"
#include "kernels/cpu/spmv_csr.hpp"

namespace fs = std::filesystem;
using namespace spconv;

namespace {

using clock_type = std::chrono::steady_clock;

// Milliseconds of `repeat` runs. The tables use the median; the minimum goes to the JSON
// as well, since on a busy machine a run whose second thread waited for a core costs a
// whole scheduler tick (4 ms) and the median of a small matrix may be such a run.
struct timing {
  double median = 0, min = 0;
};

// Timing of `repeat` calls of f after one warm-up call. A result f returns is destroyed
// outside the timed interval (freeing is not part of a conversion's cost).
template <class F>
timing time_ms(int repeat, F&& f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = clock_type::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      t.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    } else {
      const auto result = f();
      t.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    }
  }
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return {n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, t.front()};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return in ? a + " " + b + " " + c : "unknown";
}

struct format_figures {
  std::string format;
  std::string refused;  // the error message when CSR -> X threw
  timing to, back, spmv;
  double spmv_error = 0;  // spmv_max_rel_error of X's SpMV, against the tolerance
  bool spmv_ok = true;
  std::size_t bytes = 0;
};

struct matrix_figures {
  std::string name;
  std::int64_t rows = 0, cols = 0, nnz = 0;
  timing csr_spmv;
  std::vector<format_figures> formats;  // in format_list order
};

matrix_figures bench_matrix(const fs::path& path, const convert_options& opt, int repeat) {
  read_options ro;
  ro.values = value_type::f64;
  const any_matrix m = read_matrix_file(path, ro).matrix;
  const auto& a = std::get<csr<double, std::int32_t>>(m);
  matrix_figures out;
  out.name = path.filename().string();
  out.rows = a.rows;
  out.cols = a.cols;
  out.nnz = a.nnz();
  std::int64_t max_row_len = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) max_row_len = std::max<std::int64_t>(max_row_len, a.row_ptr[r + 1] - a.row_ptr[r]);

  std::vector<double> x(static_cast<std::size_t>(a.cols)), y(static_cast<std::size_t>(a.rows));
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = 1.0 + static_cast<double>(j % 17) / 16.0;
  out.csr_spmv = time_ms(repeat, [&] { cpu::spmv(a, 1.0, x.data(), 0.0, y.data()); });

  const std::vector<double> y0(y.size(), 0.0);
  for (auto name : format_list) {
    format_figures f;
    f.format = std::string(name);
    std::optional<any_matrix> xm;
    try {
      xm = convert(m, name, opt);
    } catch (const error& e) {
      f.refused = e.what();
      out.formats.push_back(f);
      continue;
    }
    f.bytes = bytes(*xm);
    f.to = time_ms(repeat, [&] { return convert(m, name, opt); });
    f.back = time_ms(repeat, [&] { return convert(*xm, "csr"); });
    f.spmv = time_ms(repeat, [&] { cpu::spmv<double>(*xm, 1.0, x.data(), 0.0, y.data()); });
    // A fast wrong kernel is no figure: checked once against the double reference.
    f.spmv_error = cpu::spmv_max_rel_error(a, 1.0, x.data(), 0.0, y0.data(), y.data());
    f.spmv_ok = f.spmv_error <= cpu::spmv_tolerance<double>(max_row_len);
    out.formats.push_back(f);
  }
  return out;
}

// One table: a row per matrix, a column per format holding value(matrix, format), and
// the geometric mean per format over the matrices where the format converted.
// `mark_wrong` flags with '!' the formats whose SpMV result was beyond the tolerance.
template <class Value>
void print_table(const char* title, const std::vector<matrix_figures>& all, bool mark_wrong, Value&& value) {
  std::printf("\n%s\n%-32s %10s %10s", title, "matrix", "nnz", "CSR SpMV");
  for (auto n : format_list) std::printf(" %8.*s", static_cast<int>(n.size()), n.data());
  std::printf("\n");
  std::vector<double> log_sum(format_list.size(), 0.0);
  std::vector<int> count(format_list.size(), 0);
  for (const auto& m : all) {
    std::printf("%-32s %10lld %8.3fms", m.name.c_str(), static_cast<long long>(m.nnz), m.csr_spmv.median);
    for (std::size_t k = 0; k < m.formats.size(); ++k) {
      const auto& f = m.formats[k];
      if (!f.refused.empty()) {
        std::printf(" %8s", "refused");
        continue;
      }
      const double v = value(m, f);
      std::printf(" %7.2f%c", v, mark_wrong && !f.spmv_ok ? '!' : ' ');
      if (v > 0) {
        log_sum[k] += std::log(v);
        ++count[k];
      }
    }
    std::printf("\n");
  }
  std::printf("%-32s %10s %10s", "geometric mean", "", "");
  for (std::size_t k = 0; k < format_list.size(); ++k)
    if (count[k]) std::printf(" %8.2f", std::exp(log_sum[k] / count[k]));
    else std::printf(" %8s", "-");
  std::printf("\n");
}

nlohmann::json to_json(const std::vector<matrix_figures>& all, int repeat, const std::string& machine,
                       const std::string& load_before, const std::string& load_after) {
  nlohmann::json j;
  j["machine"] = machine;
  j["threads"] = thread_count();
  j["repeat"] = repeat;
  j["loadavg_before"] = load_before;
  j["loadavg_after"] = load_after;
  j["matrices"] = nlohmann::json::array();
  for (const auto& m : all) {
    nlohmann::json jm{{"name", m.name},
                      {"rows", m.rows},
                      {"cols", m.cols},
                      {"nnz", m.nnz},
                      {"csr_spmv_ms", m.csr_spmv.median},
                      {"csr_spmv_min_ms", m.csr_spmv.min}};
    jm["formats"] = nlohmann::json::object();
    for (const auto& f : m.formats) {
      if (!f.refused.empty()) {
        jm["formats"][f.format] = {{"refused", f.refused}};
        continue;
      }
      const double unit = m.csr_spmv.median;
      jm["formats"][f.format] = {{"csr_to_x_ms", f.to.median},
                                 {"csr_to_x_min_ms", f.to.min},
                                 {"x_to_csr_ms", f.back.median},
                                 {"x_to_csr_min_ms", f.back.min},
                                 {"spmv_ms", f.spmv.median},
                                 {"spmv_min_ms", f.spmv.min},
                                 {"csr_to_x_spmv_units", f.to.median / unit},
                                 {"x_to_csr_spmv_units", f.back.median / unit},
                                 {"spmv_vs_csr", f.spmv.median / unit},
                                 {"bytes", f.bytes},
                                 {"spmv_max_rel_error", f.spmv_error},
                                 {"spmv_ok", f.spmv_ok}};
    }
    j["matrices"].push_back(jm);
  }
  return j;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_convert [INPUT...] [--shared DIR] [--repeat N] [--csr5-for cpu|gpu] [--json FILE]\n"
               "  INPUT: .mtx files or directories of them (default: DIR/matrices/real)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // The shared folder sits beside the repository: this file is tests/bench/ in it.
  fs::path shared = fs::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared";
  std::vector<fs::path> args;
  fs::path json_path;
  int repeat = 20;
  convert_options opt;
  // The SpMV timed here is the CPU one, so CSR5's automatic tile is the CPU rule.
  opt.csr5_for = csr5_target::cpu;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (s == "--shared" && i + 1 < argc) shared = argv[++i];
    else if (s == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (s == "--csr5-for" && i + 1 < argc) {
      const std::string t = argv[++i];
      if (t != "cpu" && t != "gpu") return usage();
      opt.csr5_for = t == "cpu" ? csr5_target::cpu : csr5_target::gpu;
    } else if (!s.empty() && s[0] != '-') args.push_back(s);
    else return usage();
  }
  if (args.empty()) args.push_back(shared / "matrices" / "real");

  std::vector<fs::path> files;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(a))
        if (e.path().extension() == ".mtx") in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(a)) {
      files.push_back(a);
    } else {
      std::fprintf(stderr, "bench_convert: %s does not exist\n", a.c_str());
      return 2;
    }
  }

  const std::string machine = cpu_model(), load_before = load_average();
  std::printf("bench_convert: %s, %d threads (SPCONV_THREADS), median of %d runs after a warm-up, csr5 for %s\n",
              machine.c_str(), thread_count(), repeat, opt.csr5_for == csr5_target::cpu ? "cpu" : "gpu");
  std::printf("load average before: %s\n", load_before.c_str());
  std::vector<matrix_figures> all;
  for (const auto& f : files) {
    try {
      all.push_back(bench_matrix(f, opt, repeat));
      std::fprintf(stderr, "  %s done\n", f.filename().c_str());
    } catch (const error& e) {
      std::printf("skipped %s: %s\n", f.filename().c_str(), e.what());
    }
  }
  const std::string load_after = load_average();

  print_table("CSR -> X, in CSR SpMV times (conversion ms / CSR SpMV ms):", all, false,
              [](const matrix_figures& m, const format_figures& f) { return f.to.median / m.csr_spmv.median; });
  print_table("X -> CSR, in CSR SpMV times:", all, false,
              [](const matrix_figures& m, const format_figures& f) { return f.back.median / m.csr_spmv.median; });
  print_table("X SpMV / CSR SpMV (below 1: X is faster); '!' marks a result beyond the tolerance:", all, true,
              [](const matrix_figures& m, const format_figures& f) { return f.spmv.median / m.csr_spmv.median; });
  std::printf("\nload average after: %s\n", load_after.c_str());

  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << to_json(all, repeat, machine, load_before, load_after).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_convert: cannot write %s\n", json_path.c_str());
      return 4;
    }
  }
  return 0;
}
