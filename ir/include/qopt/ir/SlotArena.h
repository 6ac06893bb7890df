// SlotArena: where a graph keeps its nodes and values.
//
// A model of a million nodes walked node by node misses the cache on every object when each one
// is its own heap allocation: consecutive nodes sit wherever malloc put them. The arena hands out
// slots from chunks in creation order, so that a walk over a graph built front to back reads
// memory in order (the hardware prefetcher keeps up), and erasing an object runs its destructor
// and keeps the slot for the next object instead of calling free(). Chunks grow geometrically
// from a few slots (subgraphs are often tiny) and go back to the heap when the arena dies.
//
// Every slot has a dense index, fixed for the object's lifetime: per-object state in an
// algorithm can live in a vector of slotCount() entries instead of a hash map keyed by pointer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace qopt {

template <class T>
class SlotArena {
 public:
  SlotArena() = default;
  SlotArena(const SlotArena&) = delete;
  SlotArena& operator=(const SlotArena&) = delete;
  /// Live objects must be gone already (destroyAll): their destructors may need the owner.
  ~SlotArena() = default;

  /// Constructs a T in a free slot (the most recently freed one first); `slot` receives its
  /// index.
  template <class... Args>
  T* create(uint32_t& slot, Args&&... args) {
    if (!freeSlots_.empty()) {
      slot = freeSlots_.back();
      T* object = ::new (address(slot)) T(std::forward<Args>(args)...);
      freeSlots_.pop_back();
      live_[slot] = 1;
      ++size_;
      return object;
    }
    if (slotCount_ == capacity_) grow();
    slot = static_cast<uint32_t>(slotCount_);
    T* object = ::new (address(slot)) T(std::forward<Args>(args)...);
    ++slotCount_;
    live_.push_back(1);
    ++size_;
    return object;
  }

  /// Destroys the object in `slot` (which `object` occupies) and keeps the slot for reuse.
  void destroy(T* object, uint32_t slot) {
    object->~T();
    live_[slot] = 0;
    freeSlots_.push_back(slot);
    --size_;
  }

  /// Destroys every live object, in slot order.
  void destroyAll() {
    for (size_t slot = 0; slot < slotCount_; ++slot) {
      if (!live_[slot]) continue;
      live_[slot] = 0;
      static_cast<T*>(address(slot))->~T();
    }
    freeSlots_.clear();
    live_.clear();
    slotCount_ = 0;
    size_ = 0;
  }

  /// Calls fn on every live object, in slot order.
  template <class Fn>
  void forEach(Fn&& fn) const {
    for (size_t slot = 0; slot < slotCount_; ++slot) {
      if (live_[slot]) fn(static_cast<T*>(address(slot)));
    }
  }

  /// Live objects.
  size_t size() const { return size_; }
  /// Slots handed out so far (live or free): every slot index is below it.
  size_t slotCount() const { return slotCount_; }

 private:
  // Chunk k holds kFirstChunk << k slots (up to kMaxChunk), so slot indices map to chunks by
  // arithmetic and no chunk table lookup beyond one vector index is needed.
  static constexpr size_t kFirstChunkLog = 3;
  static constexpr size_t kMaxChunkLog = 10;
  struct alignas(T) Storage {
    std::byte bytes[sizeof(T)];
  };

  static size_t chunkSize(size_t k) {
    return size_t{1} << std::min(kFirstChunkLog + k, kMaxChunkLog);
  }

  void* address(size_t slot) const {
    // Chunks 0..K-1 of the geometric part hold 8, 16, ..., 512 slots: together 1016.
    constexpr size_t geometricSlots = (size_t{1} << kMaxChunkLog) - (size_t{1} << kFirstChunkLog);
    constexpr size_t geometricChunks = kMaxChunkLog - kFirstChunkLog;
    size_t chunk, offset;
    if (slot < geometricSlots) {
      // Chunk k starts at 8 * (2^k - 1): find k from the highest bit of slot / 8 + 1.
      size_t scaled = (slot >> kFirstChunkLog) + 1;
      chunk = static_cast<size_t>(63 - __builtin_clzll(scaled));
      offset = slot - (((size_t{1} << chunk) - 1) << kFirstChunkLog);
    } else {
      size_t rest = slot - geometricSlots;
      chunk = geometricChunks + (rest >> kMaxChunkLog);
      offset = rest & ((size_t{1} << kMaxChunkLog) - 1);
    }
    return &chunks_[chunk][offset];
  }

  void grow() {
    size_t size = chunkSize(chunks_.size());
    chunks_.push_back(std::make_unique_for_overwrite<Storage[]>(size));
    capacity_ += size;
  }

  std::vector<std::unique_ptr<Storage[]>> chunks_;
  std::vector<uint32_t> freeSlots_;
  std::vector<uint8_t> live_;
  size_t slotCount_ = 0;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace qopt
