// The machine's physical memory: the bound a reader checks a file's declared sizes against
// before allocating, so that a small file claiming a huge matrix is refused with a message
// instead of ending in the kernel's out-of-memory kill.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <string>

namespace spconv {

inline double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

// "N GB", rounded down, for messages.
inline std::string gigabytes(double bytes) { return std::to_string(static_cast<long long>(bytes / 1e9)) + " GB"; }

}  // namespace spconv
