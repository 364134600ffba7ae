// A container's stored format loaded straight into device memory (specs/container.md,
// "Loading to the device"): the same checks as read_container before anything is allocated,
// then each dataset's chunks read from the file, checked (Fletcher32) and decompressed on
// several threads into pinned buffers, each copied to the device asynchronously (and
// unshuffled there) while the next chunks are decoded. CUDA builds only; no CUDA types
// here, so .cpp files include it with g++.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"

namespace spconv {

// What one load did, for benchmarks and diagnostics.
struct device_load_stats {
  std::uint64_t device_bytes = 0;     // bytes of the arrays now in device memory
  std::uint64_t file_bytes = 0;       // stored bytes of the chunks read and decoded by spconv
  int datasets_decoded = 0;           // datasets whose chunks spconv read and decoded itself
  int datasets_through_hdf5 = 0;      // datasets HDF5 read (H5Dread), see specs/container.md
  std::uint64_t chunks = 0;           // chunks spconv decoded
  int threads = 0;                    // decoding threads used
  std::size_t staging_bytes = 0;      // pinned staging memory used (the context's, see gpu_context::pinned_staging)
  double check_seconds = 0;           // opening the file and every check before allocation
  double staging_seconds = 0;         // setting up the staging ring (pinning memory on a context's first load)
  double transfer_seconds = 0;        // reading, decoding and copying until the device has it all
  double validate_seconds = 0;        // device_load_options::validate: copy back and validate()
};

struct device_load_options {
  // Also run what read_container checks once the arrays are in memory, on a host copy of the
  // loaded matrix: the format's validate(), nnz() against the root's nnz, the binsparse
  // descriptor. Off by default: every check that bounds an allocation runs regardless, and every
  // chunk's Fletcher32 checksum (which spconv always writes) is verified, so a file spconv
  // wrote (validated before writing) loads exactly or is refused; a file from another writer,
  // or one whose datasets carry no checksum, deserves validate = true.
  bool validate = false;
  // Decoding threads; 0: formats/parallel.hpp's thread_count() (SPCONV_THREADS, else every core).
  int threads = 0;
  // Bytes of one pinned staging buffer (rounded down to a multiple of 8, at least 64 KiB); the
  // ring holds threads + 2 of them.
  std::size_t staging_buffer_bytes = std::size_t{2} << 20;
  // Filled in when not null.
  device_load_stats* stats = nullptr;
};

// Loads one stored format of the container at `path` into device memory on ctx's device
// (`format` as read_container picks it: "" = csr when stored, else the first group). Returns
// when the copies are complete. Errors: as read_container (errc::io, errc::bad_input naming the
// object, errc::usage for a format not stored, errc::unsupported), plus errc::bad_input naming
// the file, dataset and chunk for a chunk that fails its checksum or does not decode, and
// errc::device naming the file and array when device memory is short.
any_device_matrix load_container_to_device(const std::filesystem::path& path, const std::string& format,
                                           gpu_context& ctx, const device_load_options& opt = {});

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
