// The zstd filter as an HDF5 dynamically loaded plugin (libh5zstd_spconv.so): HDF5
// dlopens every library in HDF5_PLUGIN_PATH (or its default plugin directory) and asks
// each for its type and filter class when a dataset needs a filter it does not have.
// spconv itself does not need this: it registers the same filter in-process.
#include <H5PLextern.h>

#include "io/hdf5/zstd_filter.hpp"

extern "C" {

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void* H5PLget_plugin_info(void) { return &spconv::h5::zstd_filter_class; }

}
