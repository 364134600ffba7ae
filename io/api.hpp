// The spconv library API, what `#include <spconv/spconv.hpp>` gives a program: read a matrix
// file (Matrix Market or an spconv container) as stored or straight into the format its
// solver uses, on the host or in device memory; write containers; convert; multiply. The
// `spconv` CLI is a thin layer over these same calls. README.md, section "The C++ API", has a
// complete example; specs/container.md is the file format.
//
// Also part of the API, declared in the headers included below and not wrapped here:
//   convert(any_matrix, "fmt", convert_options)        convert/graph.hpp: any format -> any other
//   resolve_params(any_matrix, "fmt", convert_options)  the parameters convert would choose
//   read_container_info(path)                           io/hdf5/container.hpp: shape, types and
//                                                       stored formats without reading arrays
//   quiet_hdf5_errors()                                 io/hdf5/container.hpp: HDF5's error
//                                                       printing off process-wide (untrusted files)
//   cpu::spmv(A, alpha, x, beta, y)                     y = alpha*A*x + beta*y on the host, on an
//                                                       any_matrix or any typed format
//   cpu::spmv_max_rel_error / cpu::spmv_tolerance       kernels/cpu/spmv_csr.hpp: the accuracy rule
//   and in CUDA builds (SPCONV_HAVE_CUDA):
//   gpu_context, gpu_available()                        formats/device.hpp
//   to_device(m) / to_host(m)                           formats/device_array.hpp, any_device_matrix.hpp
//   gpu::convert(any_device_matrix, "fmt", opt, ctx)    convert/gpu/graph.hpp
//   gpu::spmv(A, alpha, x, beta, y, ctx)                kernels/gpu/spmv_any.hpp and spmv_X.hpp:
//                                                       A, x, y in device memory, queued on ctx;
//                                                       CSR: a csr_method as a 7th argument
//                                                       (default hola: HOLA-SpMV; rows: our
//                                                       row kernel; cusparse)
//
// Errors: every call throws spconv::error (formats/error.hpp), whose code() is the category:
// errc::usage (bad arguments: unknown format name, existing output without force),
// errc::bad_input (malformed or lying file), errc::io (cannot open, read or write),
// errc::unsupported (a matrix or request spconv does not handle), errc::device (no GPU, device
// memory short). Messages name the file and the object or line.
//
// Threads: every function here may run on several threads at once, on the same file or on
// different ones. HDF5 runs one call at a time (a build without thread-safety must never be
// entered by two threads at once; a thread-safe one, such as Debian's, serialises its calls
// itself), so every container read and write holds one process-wide lock for its HDF5 part:
// opening the file, reading and decompressing (or compressing and writing) the datasets,
// checking the stored format's invariants. Container reads therefore take turns and
// do not speed each other up; what runs in parallel is everything else: Matrix Market parsing,
// the conversions of read<Fmt> and convert, the decoding and copies of a device load
// (specs/container.md, "Concurrency"), SpMV, and a write's checks of its input before it
// touches the disk. A program that itself calls HDF5 from other threads
// while spconv runs holds hdf5_lock() around those calls (needed where HDF5 is not built
// thread-safe). Two writes to the same path each stay
// atomic (the last rename wins; without write_options::force the later one may fail as
// existing). Matrix values are not synchronised: share them read-only. gpu_context is one per
// host thread (formats/device.hpp).
#pragma once
#include <filesystem>
#include <mutex>
#include <vector>

#include "convert/graph.hpp"
#include "formats/any_matrix.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv.hpp"
#include "kernels/cpu/spmv_bcsr.hpp"
#include "kernels/cpu/spmv_ccoo.hpp"
#include "kernels/cpu/spmv_cmrs.hpp"
#include "kernels/cpu/spmv_coo.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/cpu/spmv_csr5.hpp"
#include "kernels/cpu/spmv_hyb.hpp"
#include "kernels/cpu/spmv_mbr.hpp"
#ifdef SPCONV_HAVE_CUDA
#include "convert/gpu/graph.hpp"
#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"
#include "io/hdf5/device_load.hpp"
#include "kernels/gpu/spmv_coo.hpp"
#include "kernels/gpu/spmv_csr_hola.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_any.hpp"
#include "kernels/gpu/spmv_bcsr.hpp"
#include "kernels/gpu/spmv_ccoo.hpp"
#include "kernels/gpu/spmv_cmrs.hpp"
#include "kernels/gpu/spmv_csr5.hpp"
#include "kernels/gpu/spmv_hyb.hpp"
#include "kernels/gpu/spmv_mbr.hpp"
#endif

namespace spconv {

// ---- reading ------------------------------------------------------------------------------

// The matrix a file holds, as stored: a container's stored format (read_options::format, by
// default csr when stored, else the first group by name), checked against every rule of
// specs/container.md and validated; a Matrix Market file (.mtx, .mtx.gz, recognised by content)
// as canonical CSR with int32 indices. read_options::values casts a container's values after
// loading, or is the type a Matrix Market file is parsed into (default double).
// Errors: errc::io (missing, unreadable, a directory), errc::bad_input (malformed or lying
// file), errc::usage (the named format is not stored), errc::unsupported.
any_matrix read(const std::filesystem::path& path, const read_options& opt = {});

struct read_as_options {
  // Whether read<Fmt> may convert when the file does not hold Fmt. false: errc::unsupported
  // instead, naming the file, the format asked for and what the file holds.
  bool allow_convert = true;
  // Parameters and rules for a conversion to Fmt (0 fields: automatic, see convert/graph.hpp).
  // Its value and index types are ignored: Fmt's own are used.
  convert_options conversion;
};

// The matrix as the typed host format Fmt (any any_matrix alternative, e.g. csr<double>,
// csr<float, std::int64_t>, hyb<double>, csr5<float>).
// A container that holds Fmt's format with Fmt's value type (and, for csr and coo, index
// type) gives that group as stored, without conversion. Otherwise the matrix is converted
// through convert() into Fmt, from the group read() picks (csr when stored: one conversion
// step), with opt.conversion's parameters (0 fields: automatic). That includes Fmt's format
// stored with other types (one container has one value and one index type): its parameters
// are chosen anew, not taken from the stored group. A Matrix Market file holds canonical csr
// with int32 indices, parsed directly into Fmt's value type; any other Fmt is a conversion.
// float32 to float64 converts exactly; float64 to float32 rounds.
// Errors: as read(), plus errc::unsupported when the conversion is needed and disabled or the
// matrix does not fit Fmt (e.g. more entries than its 32-bit indices reach).
template <class Fmt>
Fmt read(const std::filesystem::path& path, const read_as_options& opt = {});

#ifdef SPCONV_HAVE_CUDA
// read<Fmt> into device memory (the current device of ctx's thread), ready for gpu::spmv.
// When the container holds Fmt's group with Fmt's types, it goes straight from the file to
// the device (load_container_to_device, io/hdf5/device_load.hpp: chunks decoded on several
// threads into pinned buffers, copied asynchronously; every attribute, extent and chunk
// checksum is checked, validate() is not re-run: specs/container.md "Loading to the device").
// Otherwise read<Fmt> then a copy. Returns when the copy is complete. Errors as read<Fmt>,
// plus errc::device (device memory short, naming the array).
template <class Fmt>
with_space_t<Fmt, device> load(const std::filesystem::path& path, gpu_context& ctx, const read_as_options& opt = {});

// read() into device memory: the stored format as stored.
any_device_matrix load(const std::filesystem::path& path, gpu_context& ctx, const read_options& opt = {});
#endif

// ---- writing ------------------------------------------------------------------------------

// Writes a container (.h5, .hdf5, .hdf: every format given, one group each, all of the same
// matrix) or a Matrix Market file (.mtx: one csr or coo matrix). Atomic: a temporary file
// beside `path` renamed into place at the end, so a failure leaves no partial file and never
// damages an existing one. write_options: compression (zstd level 3 by default), add (keep the
// formats already in the container and add these), force (replace an existing file). `meta`
// records the source file's name, checksum and symmetry (read_matrix_file gives them for a
// Matrix Market input).
// Errors: errc::usage (existing path without force or add, unknown extension, formats of
// different matrices), errc::io (cannot write), errc::unsupported (arrays beyond the
// container's limit).
void write(const std::filesystem::path& path, const any_matrix& m, const write_options& opt = {},
           const container_meta& meta = {});
void write(const std::filesystem::path& path, const std::vector<any_matrix>& formats, const write_options& opt = {},
           const container_meta& meta = {});

// ---- threads ------------------------------------------------------------------------------

// The process-wide lock spconv holds around every HDF5 call (see "Threads" above), for a
// program that calls HDF5 itself while other threads use spconv. Recursive: spconv calls made
// while holding it run as usual.
[[nodiscard]] std::unique_lock<std::recursive_mutex> hdf5_lock();

}  // namespace spconv
