// The format parameters on the command line: one table of options, used by `convert` and
// `bench` (to fill convert_options) and by `formats` (to list them with their defaults).
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "convert/graph.hpp"

namespace spconv::cli {

struct format_option_doc {
  std::string_view format, option, meaning, automatic;
};
extern const std::vector<format_option_doc> format_option_docs;

// Registers the parameter options on `sub`; the returned function turns what was
// parsed into convert_options (throwing errc::usage for malformed values). with_target:
// also `--for gpu|cpu` (CSR5's tile rule and --to auto's device); `bench` leaves it out, as
// the device it measures decides.
std::function<void(convert_options&)> add_format_options(CLI::App& sub, bool with_target = true);

}  // namespace spconv::cli
