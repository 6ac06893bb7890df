// The largest single tensor the interpreter may allocate on this thread (RunOptions::
// maxTensorBytes): Array's constructor checks it so a hostile shape fails before allocating.
#pragma once

#include <cstdint>

namespace qopt::interp {

class AllocationLimitScope {
 public:
  explicit AllocationLimitScope(uint64_t maxBytes);
  ~AllocationLimitScope();
  AllocationLimitScope(const AllocationLimitScope&) = delete;
  AllocationLimitScope& operator=(const AllocationLimitScope&) = delete;

 private:
  uint64_t previous_;
};

uint64_t currentAllocationLimit();

}  // namespace qopt::interp
