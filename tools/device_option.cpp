#include "tools/device_option.hpp"

#include <iostream>

#include "formats/error.hpp"
#ifdef SPCONV_HAVE_CUDA
#include "formats/device.hpp"
#endif

namespace spconv::cli {

void add_device_option(CLI::App& sub, std::string& choice, const std::string& what) {
  sub.add_option("--device", choice, what + " on: cpu, gpu, or auto (the GPU when one is visible, else the CPU)")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
}

bool use_gpu(const std::string& choice) {
  if (choice == "cpu") return false;
#ifdef SPCONV_HAVE_CUDA
  const bool available = gpu_available();
#else
  const bool available = false;
#endif
  if (choice == "auto") {
    if (!available) std::cerr << "spconv: notice: no GPU visible, working on the CPU\n";
    return available;
  }
#ifndef SPCONV_HAVE_CUDA
  fail(errc::device, "--device gpu: this spconv was built without CUDA (CPU only)");
#else
  if (!available) fail(errc::device, "--device gpu: no GPU is visible to the CUDA runtime");
  return true;
#endif
}

}  // namespace spconv::cli
