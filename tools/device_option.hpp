// --device cpu|gpu|auto: where a command does its work.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

namespace spconv::cli {

// Registers `--device` on `sub`, storing into `choice` (default "cpu").
void add_device_option(CLI::App& sub, std::string& choice, const std::string& what);

// Whether the work runs on the GPU: "gpu" -> true, or errc::device when this build has no CUDA
// or no GPU is visible; "cpu" -> false; "auto" -> true when a GPU is visible, else false
// after a notice on stderr.
bool use_gpu(const std::string& choice);

}  // namespace spconv::cli
