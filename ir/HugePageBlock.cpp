#include "qopt/ir/HugePageBlock.h"

#include <cstdlib>

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

}  // namespace qopt
