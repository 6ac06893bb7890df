// SlotArena: where a graph keeps its nodes and values.
//
// A model of a million nodes walked node by node misses the cache on every object when each one
// is its own heap allocation: consecutive nodes sit wherever malloc put them. The arena hands out
// slots from chunks in creation order, so that a walk over a graph built front to back reads
// memory in order (the hardware prefetcher keeps up), and erasing an object runs its destructor
// and keeps the slot for the next object instead of calling free(). Chunks grow geometrically
// from a few slots (subgraphs are often tiny) up to 512; beyond that an arena is large, and its
// chunks are 2 MiB blocks that Linux may back with one huge page each (a walk over hundreds of
// megabytes of nodes then costs a TLB miss per 2 MiB, not per 4 KiB). All of it goes back to the
// heap when the arena dies.
//
// Every slot has a dense index, fixed for the object's lifetime: per-object state in an
// algorithm can live in a vector of slotCount() entries instead of a hash map keyed by pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "qopt/ir/HugePageBlock.h"

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
      return object;
    }
    if (slotCount_ == capacity_) grow();
    slot = static_cast<uint32_t>(slotCount_);
    T* object = ::new (address(slot)) T(std::forward<Args>(args)...);
    ++slotCount_;
    live_.push_back(1);
    return object;
  }

  /// Destroys the object in `slot` (which `object` occupies) and keeps the slot for reuse.
  void destroy(T* object, uint32_t slot) {
    object->~T();
    live_[slot] = 0;
    freeSlots_.push_back(slot);
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
  }

  /// Calls fn on every live object, in slot order.
  template <class Fn>
  void forEach(Fn&& fn) const {
    for (size_t slot = 0; slot < slotCount_; ++slot) {
      if (live_[slot]) fn(static_cast<T*>(address(slot)));
    }
  }

  /// Live objects.
  size_t size() const { return slotCount_ - freeSlots_.size(); }
  /// Slots handed out so far (live or free): every slot index is below it.
  size_t slotCount() const { return slotCount_; }

 private:
  // Chunk k < kGeometricChunks holds 8 << k slots; later chunks are huge-page blocks of
  // kHugeSlots slots. Slot indices map to chunks by arithmetic, with no search.
  static constexpr size_t kFirstChunkLog = 3;
  static constexpr size_t kMaxChunkLog = 10;
  static constexpr size_t kGeometricChunks = kMaxChunkLog - kFirstChunkLog;
  static constexpr size_t kGeometricSlots =
      (size_t{1} << kMaxChunkLog) - (size_t{1} << kFirstChunkLog);
  struct alignas(T) Storage {
    std::byte bytes[sizeof(T)];
  };
  static_assert(alignof(Storage) <= 64, "chunks are cache-line aligned");
  static constexpr size_t kHugeSlots =
      sizeof(Storage) < kHugePageBytes ? kHugePageBytes / sizeof(Storage) : 1;
  struct FreeChunk {
    void operator()(Storage* chunk) const { std::free(chunk); }
  };
  using Chunk = std::unique_ptr<Storage[], FreeChunk>;

  void* address(size_t slot) const {
    size_t chunk, offset;
    if (slot < kGeometricSlots) {
      // Chunk k starts at 8 * (2^k - 1): find k from the highest bit of slot / 8 + 1.
      size_t scaled = (slot >> kFirstChunkLog) + 1;
      chunk = static_cast<size_t>(63 - __builtin_clzll(scaled));
      offset = slot - (((size_t{1} << chunk) - 1) << kFirstChunkLog);
    } else {
      size_t rest = slot - kGeometricSlots;
      chunk = kGeometricChunks + rest / kHugeSlots;
      offset = rest % kHugeSlots;
    }
    return &chunks_[chunk][offset];
  }

  void grow() {
    const bool geometric = chunks_.size() < kGeometricChunks;
    const size_t slots = geometric ? size_t{1} << (kFirstChunkLog + chunks_.size()) : kHugeSlots;
    chunks_.emplace_back(static_cast<Storage*>(allocateArrayBlock(slots * sizeof(Storage))));
    capacity_ += slots;
  }

  std::vector<Chunk> chunks_;
  std::vector<uint32_t> freeSlots_;
  std::vector<uint8_t> live_;
  size_t slotCount_ = 0;
  size_t capacity_ = 0;
};

}  // namespace qopt
