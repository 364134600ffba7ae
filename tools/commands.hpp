// The spconv CLI: each subcommand registers its options on a CLI11 app and returns
// the function that runs it. The CLI is a thin layer over the library.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace spconv::cli {

struct command {
  CLI::App* sub;             // the subcommand, owned by the parent app
  std::function<int()> run;  // runs it once parsed; returns the exit code
};

command add_convert(CLI::App& app);
command add_info(CLI::App& app);
command add_formats(CLI::App& app);
command add_validate(CLI::App& app);
command add_bench(CLI::App& app);
command add_gen(CLI::App& app);

}  // namespace spconv::cli
