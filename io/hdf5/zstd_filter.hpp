// The HDF5 zstd filter (registered id 32015), compatible with the public HDF5 zstd
// plugin: cd_values[0] = level, each chunk is one zstd frame; cd_values[1] = the chunk's
// size in bytes, which the public plugin ignores and this filter checks (specs/container.md,
// section 4). The same code is registered in-process by spconv and exported by the
// dynamically loaded plugin (zstd_plugin.cpp) for h5dump, h5py and other programs.
#pragma once
#include <hdf5.h>

#include <cstddef>

namespace spconv::h5 {

inline constexpr H5Z_filter_t zstd_filter_id = 32015;

// The H5Z_func_t callback. Compresses (flags without H5Z_FLAG_REVERSE) or decompresses
// the nbytes at *buf, replacing *buf (allocated with H5allocate_memory) and *buf_size.
// Returns the valid bytes in the new buffer, or 0 on failure with the reason pushed on
// HDF5's error stack (then HDF5 fails the read or write). With cd_nelmts >= 2 a frame
// must decode to exactly cd_values[1] bytes.
std::size_t zstd_filter(unsigned flags, std::size_t cd_nelmts, const unsigned cd_values[], std::size_t nbytes,
                        std::size_t* buf_size, void** buf);

extern const H5Z_class2_t zstd_filter_class;

// Registers the filter with the HDF5 library of this process, once (thread-safe);
// every container call does this first. Throws errc::io if HDF5 refuses.
void register_zstd_filter();

}  // namespace spconv::h5
