// HashSlots: the slot array under the IR's hash tables (NameTable, ValueIndex).
//
// Open addressing with linear probing: entries sit inline in one array, each with its full
// 64-bit hash (0 marks an empty slot), so a probe usually costs one cache miss and a mismatch
// never touches the key. Deletion shifts later entries of the probe run back (no tombstones),
// so a table does not degrade after many erases. The table type decides what a slot holds
// besides the hash and what matches: HashSlots only places, finds, moves and erases slots.
//
// A model of a million values needs a table of two million slots. Arrays of 2 MiB or more are
// huge-page blocks: a random probe then costs a cache miss, not also a TLB miss and a page walk.
//
// Nothing iterates the table: its order depends on hash values, which must never reach output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "qopt/ir/HugePageBlock.h"

namespace qopt {

/// The hash the IR's tables use for a name; never 0 (which marks an empty slot).
inline uint64_t hashName(std::string_view name) {
  uint64_t h = std::hash<std::string_view>{}(name);
  return h == 0 ? 1 : h;
}

template <class Slot>
class HashSlots {
 public:
  HashSlots() = default;
  HashSlots(const HashSlots&) = delete;
  HashSlots& operator=(const HashSlots&) = delete;
  HashSlots(HashSlots&& other) noexcept
      : slots_(std::exchange(other.slots_, nullptr)),
        capacity_(std::exchange(other.capacity_, 0)),
        size_(std::exchange(other.size_, 0)) {}
  HashSlots& operator=(HashSlots&& other) noexcept {
    if (this != &other) {
      release();
      slots_ = std::exchange(other.slots_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~HashSlots() { release(); }

  size_t size() const { return size_; }

  /// Makes room for `count` entries without growing again.
  void reserve(size_t count) {
    size_t needed = kMinCapacity;
    while (count * kMaxLoadDen > needed * kMaxLoadNum) needed *= 2;
    if (needed > capacity_) rehash(needed);
  }

  void clear() { release(); }

  /// Starts loading the slot where `hash` is looked up first.
  void prefetch(uint64_t hash) const {
    if (capacity_) __builtin_prefetch(&slots_[hash & mask()]);
  }

  /// The first slot of `hash`'s probe run for which match(slot) holds, or null.
  template <class Match>
  Slot* find(uint64_t hash, Match&& match) const {
    if (capacity_ == 0) return nullptr;
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& slot = slots_[i];
      if (slot.hash == 0) return nullptr;
      if (slot.hash == hash && match(slot)) return &slot;
    }
  }

  /// As find, else a new slot holding `hash` (its other fields value-initialised) and true.
  /// With a match that never holds, adds an entry beside equal ones (a multimap).
  template <class Match>
  std::pair<Slot*, bool> findOrAdd(uint64_t hash, Match&& match) {
    if ((size_ + 1) * kMaxLoadDen > capacity_ * kMaxLoadNum) {
      rehash(capacity_ == 0 ? kMinCapacity : capacity_ * 2);
    }
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& slot = slots_[i];
      if (slot.hash == 0) {
        slot.hash = hash;
        ++size_;
        return {&slot, true};
      }
      if (slot.hash == hash && match(slot)) return {&slot, false};
    }
  }

  /// Erases an occupied slot found by find or findOrAdd. Entries after it that probed past it
  /// move back, so every other entry stays findable without tombstones.
  void erase(Slot* erased) {
    size_t hole = static_cast<size_t>(erased - slots_);
    for (size_t j = (hole + 1) & mask();; j = (j + 1) & mask()) {
      Slot& slot = slots_[j];
      if (slot.hash == 0) break;
      size_t home = slot.hash & mask();
      // The entry at j may fill the hole when its home is not cyclically within (hole, j].
      bool homeBetween = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (homeBetween) continue;
      slots_[hole] = std::move(slot);
      hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
  }

 private:
  // At most 7/10 full: probe runs stay short, and a run mostly stays in the cache line it
  // started in.
  static constexpr size_t kMaxLoadNum = 7;
  static constexpr size_t kMaxLoadDen = 10;
  static constexpr size_t kMinCapacity = 16;

  size_t mask() const { return capacity_ - 1; }

  static Slot* allocate(size_t capacity) {
    Slot* slots = static_cast<Slot*>(allocateArrayBlock(capacity * sizeof(Slot)));
    std::uninitialized_value_construct_n(slots, capacity);
    return slots;
  }

  void release() {
    if (!slots_) return;
    std::destroy_n(slots_, capacity_);
    std::free(slots_);
    slots_ = nullptr;
    capacity_ = size_ = 0;
  }

  void rehash(size_t capacity) {
    Slot* old = std::exchange(slots_, allocate(capacity));
    size_t oldCapacity = std::exchange(capacity_, capacity);
    for (size_t k = 0; k < oldCapacity; ++k) {
      if (old[k].hash == 0) continue;
      size_t i = old[k].hash & mask();
      while (slots_[i].hash != 0) i = (i + 1) & mask();
      slots_[i] = std::move(old[k]);
    }
    if (old) {
      std::destroy_n(old, oldCapacity);
      std::free(old);
    }
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace qopt
