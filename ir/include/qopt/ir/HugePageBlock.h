// Memory for the IR's large arrays (arena chunks, hash table slots), in 2 MiB huge pages where
// the kernel allows: a walk or a random probe over hundreds of megabytes then costs a TLB miss
// per 2 MiB instead of a page walk per 4 KiB.
#pragma once

#include <cstddef>

namespace qopt {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// Allocates `bytes` (a multiple of 2 MiB) aligned to 2 MiB, and asks the kernel to back it
/// with huge pages where it can (advice only). Free with std::free.
void* allocateHugePageBlock(size_t bytes);

/// Memory for an array of at least `bytes`: a huge-page block (size rounded up to 2 MiB) from
/// 2 MiB on, else cache-line aligned. Free with std::free; throws std::bad_alloc.
void* allocateArrayBlock(size_t bytes);

}  // namespace qopt
