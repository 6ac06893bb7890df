#include "qopt/ir/SlotArena.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace qopt {

void* allocateHugePageBlock(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  void* memory = std::aligned_alloc(kHugePage, bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Where transparent huge pages are off or none is free, the block keeps small pages.
  if (memory) (void)::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
  return memory;
}

}  // namespace qopt
