// spconv bench [IN...] [--generate KIND:P...] [--formats all|LIST] [--device cpu|gpu|both] [--type float|double]
//                    [--repeat N] [--json FILE] [--csv FILE] [--plot DIR] [--scale-to NNZ]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "formats/any_matrix.hpp"
#include "tools/bench_measure.hpp"
#include "tools/bench_report.hpp"
#include "tools/commands.hpp"
#include "tools/format_options.hpp"

#ifdef SPCONV_HAVE_CUDA
#include "formats/device.hpp"
#endif

namespace spconv::cli {
namespace fs = std::filesystem;

namespace {

bool has_matrix_suffix(const fs::path& p) {
  const std::string n = p.filename().string();
  auto ends = [&](std::string_view s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
  return ends(".mtx") || ends(".mtx.gz") || ends(".h5") || ends(".hdf5");
}

// Files as given, directories as their .mtx, .mtx.gz and .h5 files in name order (not
// descending into subdirectories).
std::vector<fs::path> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(in, ec))
        if (e.is_regular_file() && has_matrix_suffix(e.path())) found.push_back(e.path());
      if (ec) fail(errc::io, in + ": cannot list the directory: " + ec.message());
      if (found.empty()) fail(errc::usage, in + ": no .mtx, .mtx.gz or .h5 files in this directory");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(in, ec)) {
      files.emplace_back(in);
    } else {
      fail(errc::io, in + ": no such file or directory");
    }
  }
  return files;
}

// A given format parameter out of its range (--height 17, --block 9x9 for mbr, ...) is refused
// as a usage error before anything is measured, as `convert` refuses it: the rules' range
// checks need no matrix, so each measured format's parameters are resolved on an empty one.
void check_format_parameters(const bench::settings& s) {
  csr<double, std::int32_t> a;
  a.row_ptr = {0};
  const any_matrix empty(std::move(a));
  convert_options o = s.options;
  o.values = s.values;
  for (const auto& name : s.formats) resolve_params(empty, name, o);
}

std::vector<std::string> parse_formats(const std::string& list) {
  if (list == "all") return {format_list.begin(), format_list.end()};
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    check_format_name(name);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.empty()) fail(errc::usage, "--formats: name at least one format, or all");
  return out;
}

bool gpu_present() {
#ifdef SPCONV_HAVE_CUDA
  return gpu_available();
#else
  return false;
#endif
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) fail(errc::io, path.string() + ": cannot write");
}

// A one-line progress bar on stderr, redrawn in place; only on a terminal.
class progress_bar {
 public:
  explicit progress_bar(std::size_t total) : total_(total), on_(::isatty(STDERR_FILENO) == 1) {}
  void matrix(std::size_t index, std::string name) {
    index_ = index;
    name_ = std::move(name);
  }
  void show(const std::string& what) {
    if (!on_) return;
    constexpr int width = 24;
    const auto done = static_cast<int>(width * index_ / std::max<std::size_t>(total_, 1));
    std::string line = "[" + std::string(static_cast<std::size_t>(done), '=') +
                       std::string(static_cast<std::size_t>(width - done), ' ') + "] " + std::to_string(index_ + 1) + "/" +
                       std::to_string(total_) + " " + name_ + ": " + what;
    if (line.size() > 100) line.resize(100);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (!on_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  std::size_t total_, index_ = 0;
  bool on_;
  std::string name_;
};

// tools/bench_plot.py: installed beside the binary (PREFIX/share/spconv, next to PREFIX/bin),
// else the source tree this file was compiled from.
fs::path plot_script() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "spconv" / "bench_plot.py";
    if (fs::exists(installed)) return installed;
  }
  const fs::path source = fs::path(__FILE__).parent_path() / "bench_plot.py";
  if (fs::exists(source)) return source;
  fail(errc::io, "--plot: bench_plot.py is neither in " + (exe.parent_path().parent_path() / "share/spconv").string() +
                     " nor in " + source.parent_path().string());
}

// Runs `python` bench_plot.py JSON DIR; the exit code, 127 when python cannot be started.
int run_python(const std::string& python, const std::string& script, const fs::path& json, const fs::path& dir) {
  const std::string j = json.string(), d = dir.string();
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid < 0) fail(errc::io, "--plot: cannot start " + python);
  if (pid == 0) {
    const char* argv[] = {python.c_str(), script.c_str(), j.c_str(), d.c_str(), nullptr};
    ::execvp(python.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail(errc::io, "--plot: lost the " + python + " process");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The charts are optional: without python3 or matplotlib (the script exits with 3) a notice
// says so and the JSON and CSV stand. Debian's interpreter first (python3-matplotlib installs
// there), then whichever python3 is first on PATH (a virtual environment, pyenv).
void run_plot(const fs::path& json, const fs::path& dir) {
  const std::string script = plot_script().string();
  int code = 127;
  for (const std::string python : {"/usr/bin/python3", "python3"}) {
    if (python.front() == '/' && !fs::exists(python)) continue;
    code = run_python(python, script, json, dir);
    if (code != 3 && code != 127) break;
  }
  if (code == 127)
    std::cerr << "spconv bench: no plots: python3 is not installed (apt-get install python3 python3-matplotlib); "
                 "the JSON and CSV are written\n";
  else if (code == 3)
    std::cerr << "spconv bench: no plots: python3-matplotlib is not installed (apt-get install python3-matplotlib); "
                 "the JSON and CSV are written\n";
  else if (code != 0)
    fail(errc::io, "--plot: " + script + " failed (exit " + std::to_string(code) + ")");
}

}  // namespace

command add_bench(CLI::App& app) {
  struct opts {
    std::vector<std::string> inputs, generate;
    std::string formats = "all", device = "cpu", type = "double", json, csv, plot, tmp;
    int repeat = 10, io_repeat = 3, batch = 0;
    std::int64_t scale_to = 0;
    bool no_storage = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "bench", "Measure conversion cost, SpMV speed, storage and load time per format, on the CPU and the GPU");
  sub->add_option("IN", o->inputs, "Matrix Market (.mtx, .mtx.gz) or container (.h5) files, or directories of them");
  sub->add_option("--generate", o->generate,
                  "also measure a generated matrix, KIND:P1:P2... with the kinds of `spconv gen` (seed 1), e.g. "
                  "stencil27:203; stencil27 is generated on the GPU when the GPU is measured (repeatable)");
  sub->add_option("--formats", o->formats, "all, or a comma-separated list of: " + format_names_joined(", "))
      ->capture_default_str();
  sub->add_option("--device", o->device,
                  "cpu, gpu or both (both without a GPU: the CPU only, with a notice)")
      ->capture_default_str();
  sub->add_option("--type", o->type, "value type: float or double")->capture_default_str();
  sub->add_option("--repeat", o->repeat, "timed samples per SpMV and conversion, after one warm-up")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--io-repeat", o->io_repeat, "timed samples per file load (containers, Matrix Market)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--batch", o->batch, "GPU: SpMVs per timed sample (default: about 10 ms of cuSPARSE, 10 to 5000)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--scale-to", o->scale_to,
                  "replicate each matrix along the diagonal (kron(I_K, A)) to at least NNZ entries")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--json", o->json, "write every figure and the machine as JSON to FILE");
  sub->add_option("--csv", o->csv, "write one row per (matrix, device, format) to FILE");
  sub->add_option("--plot", o->plot,
                  "write charts (PNG and SVG) to DIR with tools/bench_plot.py (python3-matplotlib); "
                  "also writes DIR/bench.json unless --json is given");
  sub->add_flag("--no-storage", o->no_storage, "skip container sizes and load times (and the Matrix Market parse)");
  sub->add_option("--tmp", o->tmp, "directory for the temporary containers (default: the system's)");
  // The format parameters of `convert` (for every matrix; absent: the automatic rules). The
  // device measured decides CSR5's tile rule, so there is no --for.
  auto params = add_format_options(*sub, false);
  sub->footer(
      "Per matrix and format, on each device: CSR -> X and X -> CSR time; SpMV time (median and\n"
      "minimum of --repeat samples after a warm-up), GFLOP/s, effective GB/s over the bytes the\n"
      "format reads and writes and their share of the copy bandwidth measured in the same run;\n"
      "the conversion in baseline SpMVs (GPU: cuSPARSE; CPU: the CSR reference) and the break-even\n"
      "count; the footprint against CSR; container sizes with zstd and without, container load\n"
      "time (file -> host, file -> device) against parse-and-convert from Matrix Market.\n"
      "GPU timing: each sample is a batch of SpMVs queued between two stream synchronisations,\n"
      "timed on the host and divided by the batch size (over ~10 ms this matches CUDA events).\n"
      "Each SpMV result is checked once against the baseline's; WRONG marks one beyond the bound.\n"
      "Examples:\n"
      "  spconv bench ../shared/matrices/real --formats csr,hyb,csr5 --csv out.csv\n"
      "  spconv bench matrix.mtx --device both --json out.json --plot plots/\n"
      "  spconv bench ../shared/matrices/real --device gpu --scale-to 50000000\n"
      "  spconv bench --generate stencil27:203 --device gpu --no-storage\n"
      "  spconv bench ../shared/matrices/real --device gpu --formats cmrs,bcsr --height 8 --block 2x2");

  return {sub, [o, params] {
            // Everything that can be refused is refused before the first measurement.
            bench::settings s;
            s.formats = parse_formats(o->formats);
            params(s.options);
            s.values = parse_value_type(o->type);
            check_format_parameters(s);
            if (o->device == "cpu") {
              s.cpu = true;
            } else if (o->device == "gpu") {
              s.cpu = false;
              s.gpu = true;
            } else if (o->device == "both") {
              s.cpu = true;
              s.gpu = gpu_present();
              if (!s.gpu) std::cerr << "spconv bench: no GPU available: measuring the CPU only\n";
            } else {
              fail(errc::usage, "--device: expected cpu, gpu or both, got '" + o->device + "'");
            }
            s.repeat = o->repeat;
            s.io_repeat = o->io_repeat;
            s.batch = o->batch;
            s.scale_to = o->scale_to;
            s.storage = !o->no_storage;
            s.tmp_dir = o->tmp;
            if (o->inputs.empty() && o->generate.empty())
              fail(errc::usage, "bench: nothing to measure: give input files (IN...) or --generate KIND:PARAMS");
            const std::vector<fs::path> files = expand_inputs(o->inputs);
            fs::path json_path = o->json;
            if (!o->plot.empty()) {
              std::error_code ec;
              fs::create_directories(o->plot, ec);
              if (ec) fail(errc::io, o->plot + ": cannot create the plot directory: " + ec.message());
              if (json_path.empty()) json_path = fs::path(o->plot) / "bench.json";
            }

            progress_bar bar(files.size() + o->generate.size());
            s.progress = [&bar](const std::string& what) { bar.show(what); };
            bench::runner runner(s);
            bench::report rep;
            rep.machine = bench::describe_machine(s.gpu);
            rep.config = s;
            std::cout << bench::header_text(rep) << std::flush;
            std::optional<errc> first_error;
            // The files, then the generated matrices; one that fails is skipped and reported.
            const std::size_t total = files.size() + o->generate.size();
            for (std::size_t i = 0; i < total; ++i) {
              const bool file = i < files.size();
              const std::string what = file ? files[i].string() : o->generate[i - files.size()];
              bar.matrix(i, file ? files[i].filename().string() : what);
              try {
                rep.matrices.push_back(file ? runner.measure(files[i]) : runner.measure_generated(what));
                bar.clear();
                std::cout << bench::matrix_text(rep.matrices.back()) << std::flush;
              } catch (const error& e) {
                bar.clear();
                std::cerr << "spconv bench: skipped " << what << ": " << e.what() << "\n";
                rep.skipped.emplace_back(what, e.what());
                if (!first_error) first_error = e.code();
              }
            }
            rep.machine.loadavg_after = bench::load_average();
            std::cout << bench::summary_text(rep) << std::flush;
            // Nothing measured: the error's exit code, and no JSON, CSV or charts of nothing.
            if (rep.matrices.empty() && first_error) fail(*first_error, "bench: no matrix could be measured");
            if (!json_path.empty()) write_text(json_path, bench::json_text(rep));
            if (!o->csv.empty()) write_text(o->csv, bench::csv_text(rep));
            if (!o->plot.empty()) run_plot(json_path, o->plot);
            return 0;
          }};
}

}  // namespace spconv::cli
