#include "qopt/ir/HugePageBlock.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace qopt {

void* allocateHugePageBlock(size_t bytes) {
  void* memory = std::aligned_alloc(kHugePageBytes, bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Where transparent huge pages are off or none is free, the block keeps small pages.
  if (memory) (void)::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
  return memory;
}

void* allocateArrayBlock(size_t bytes) {
  constexpr size_t kCacheLine = 64;
  void* memory =
      bytes >= kHugePageBytes
          ? allocateHugePageBlock((bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes)
          : std::aligned_alloc(kCacheLine, (bytes + kCacheLine - 1) / kCacheLine * kCacheLine);
  if (!memory) throw std::bad_alloc();
  return memory;
}

}  // namespace qopt
