#include "BufferPool.h"

#include "qopt/interp/Array.h"

#include <bit>
#include <cstdlib>

namespace qopt::interp {

namespace {

constexpr size_t kAlignment = 64;
// What the data pool keeps of freed blocks: a few samples in flight per thread are reused, a
// burst of freed ones beyond this goes back to the heap.
constexpr size_t kDataPoolBytes = size_t{32} << 20;
thread_local BufferPool* currentPool = nullptr;
thread_local bool dataArrays = false;

// Size classes: multiples of 64 bytes up to 64 KiB, then eight classes per power of two, so a
// block serves requests up to 12.5% smaller than itself.
size_t alignedSize(size_t bytes) {
  return bytes <= kAlignment ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

size_t sizeClass(size_t bytes) {
  if (bytes <= (size_t{64} << 10)) return alignedSize(bytes);
  const size_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

}  // namespace

std::shared_ptr<BufferPool> BufferPool::create(size_t maxRetainedBytes) {
  return std::shared_ptr<BufferPool>(new BufferPool(maxRetainedBytes));
}

BufferPool::~BufferPool() {
  release();
}

std::shared_ptr<void> BufferPool::allocate(size_t bytes) {
  const size_t cls = sizeClass(bytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      retained_ -= cls;
    }
  }
  if (block == nullptr) block = std::aligned_alloc(kAlignment, cls);
  if (block == nullptr) return nullptr;
  std::shared_ptr<BufferPool> self = shared_from_this();
  return std::shared_ptr<void>(block, [self, cls](void* p) { self->giveBack(p, cls); });
}

void BufferPool::giveBack(void* block, size_t cls) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (retained_ + cls <= maxRetained_) {
      free_[cls].push_back(block);
      retained_ += cls;
      return;
    }
  }
  std::free(block);
}

void BufferPool::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : free_) {
    for (void* block : entry.second) std::free(block);
  }
  free_.clear();
  retained_ = 0;
  maxRetained_ = 0;
}

size_t BufferPool::retainedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retained_;
}

BufferPoolScope::BufferPoolScope(BufferPool* pool) : previous_(currentPool) {
  currentPool = pool;
}

BufferPoolScope::~BufferPoolScope() {
  currentPool = previous_;
}

DataArrayScope::DataArrayScope() : previous_(dataArrays) {
  dataArrays = true;
}

DataArrayScope::~DataArrayScope() {
  dataArrays = previous_;
}

std::shared_ptr<void> allocateTensorStorage(size_t bytes) {
  if (currentPool != nullptr) return currentPool->allocate(bytes);
  if (dataArrays) {  // DataArrayScope (Array.h): a stream of 600 samples grew by 50 MB without it
    static const std::shared_ptr<BufferPool> dataPool = BufferPool::create(kDataPoolBytes);
    return dataPool->allocate(bytes);
  }
  void* block = std::aligned_alloc(kAlignment, alignedSize(bytes));
  if (block == nullptr) return nullptr;
  return std::shared_ptr<void>(block, [](void* p) { std::free(p); });
}

}  // namespace qopt::interp
