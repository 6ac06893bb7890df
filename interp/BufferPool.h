// Reuse of tensor storage within an interpreter. Every run allocates the same intermediates in
// the same order, and a fresh large allocation costs a page fault per 4 KiB (glibc maps big
// blocks and trims the heap top when they are freed): about a tenth of a small convolutional
// net's run time. The pool keeps freed blocks by size class and hands them out again.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace qopt::interp {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  /// Keeps at most `maxRetainedBytes` of freed blocks; blocks over it go back to the system.
  static std::shared_ptr<BufferPool> create(size_t maxRetainedBytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// 64-byte aligned storage of at least `bytes` bytes, returned to the pool when the last
  /// owner lets go (from any thread). Null when the system has no memory.
  std::shared_ptr<void> allocate(size_t bytes);
  /// Frees every retained block and retains nothing from now on.
  void release();
  size_t retainedBytes() const;

 private:
  explicit BufferPool(size_t maxRetainedBytes) : maxRetained_(maxRetainedBytes) {}
  void giveBack(void* block, size_t sizeClass);

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> blocks
  size_t retained_ = 0;
  size_t maxRetained_;
};

/// The pool that Array's constructor uses on this thread while the scope lives (null: none).
class BufferPoolScope {
 public:
  explicit BufferPoolScope(BufferPool* pool);
  ~BufferPoolScope();
  BufferPoolScope(const BufferPoolScope&) = delete;
  BufferPoolScope& operator=(const BufferPoolScope&) = delete;

 private:
  BufferPool* previous_;
};

/// Storage for a tensor of `bytes` bytes, 64-byte aligned: from this thread's current pool when
/// there is one, else from the system. Null when out of memory.
std::shared_ptr<void> allocateTensorStorage(size_t bytes);

}  // namespace qopt::interp
