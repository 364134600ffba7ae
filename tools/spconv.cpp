// spconv: convert sparse matrices between formats, inspect and validate containers.
// Exit codes: 0 success, 2 usage, 3 bad input, 4 I/O, 5 unsupported, 6 device, 1 other.
#include <cstring>
#include <iostream>
#include <algorithm>
#include <string>
#include <vector>

#include "formats/error.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5/container.hpp"
#include "tools/commands.hpp"

int main(int argc, char** argv) {
  using namespace spconv;
  install_cleanup_on_signals();  // an interrupted write leaves no temporary file behind
  quiet_hdf5_errors();           // HDF5 failures reach the user as spconv's own messages
  CLI::App app{
      "spconv " SPCONV_VERSION " - convert sparse matrices between CSR, COO, CMRS, MBR, CSR5, BCSR, HYB and compressed COO and store them in HDF5\n"
      "\n"
      "  spconv IN --to FORMAT OUT      convert (same as 'spconv convert ...')\n"
      "  spconv info FILE [--json]      shape, row lengths, stored formats and sizes\n"
      "  spconv validate FILE [--against SOURCE]\n"
      "                                 invariants and SpMV of every stored format vs the CSR reference\n"
      "  spconv formats                 the formats and their parameters\n"
      "  spconv gen KIND PARAMS... OUT  synthetic matrices: stencils, R-MAT, random, banded, blocks\n"
      "  spconv bench IN... [--device cpu|gpu|both] [--json FILE] [--csv FILE] [--plot DIR]\n"
      "                                 conversion cost, SpMV speed, storage and load time per format\n"
      "\n"
      "Exit codes: 0 ok, 2 usage, 3 bad input, 4 I/O error, 5 unsupported, 6 device error.",
      "spconv"};
  app.set_version_flag("--version", "spconv " SPCONV_VERSION);
  app.require_subcommand(0, 1);
  const std::vector<cli::command> commands = {cli::add_convert(app), cli::add_info(app), cli::add_validate(app),
                                                cli::add_formats(app), cli::add_gen(app), cli::add_bench(app)};

  // `spconv IN --to FORMAT OUT` is `spconv convert IN --to FORMAT OUT`.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0][0] != '-') {
    bool is_sub = false;
    for (const auto& c : commands) is_sub |= c.sub->check_name(args[0]);
    if (!is_sub) args.insert(args.begin(), "convert");
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector in reverse order

  try {
    app.parse(args);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(errc::usage);
  }
  try {
    for (const auto& c : commands)
      if (c.sub->parsed()) return c.run();
    std::cout << app.help();
    return static_cast<int>(errc::usage);
  } catch (const error& e) {
    std::cerr << "spconv: " << errc_name(e.code()) << ": " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    std::cerr << "spconv: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "spconv: error: " << e.what() << "\n";
    return 1;
  }
}
