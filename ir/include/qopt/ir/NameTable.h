// NameTable: a hash table from names to small values, for the IR's name bookkeeping.
//
// A model of a million nodes has a million names, and every node created, renamed or erased
// looks several of them up. std::unordered_map<std::string, V> costs two or three cache misses
// per lookup there (bucket array, then a separately allocated node per entry) and allocates on
// every insert. This table keeps entries inline in one array (open addressing, linear probing)
// with the full hash beside the key, so a lookup usually costs one miss, a miss on a long name
// never touches its characters, and lookups take a string_view without building a std::string.
// Callers that look one name up in several tables hash it once (hashOf) and pass the hash on.
//
// Nothing iterates the table: its order depends on hash values, which must never reach output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qopt {

template <class V>
class NameTable {
 public:
  static uint64_t hashOf(std::string_view key) {
    // 0 marks an empty slot, so no name may hash to it.
    uint64_t h = std::hash<std::string_view>{}(key);
    return h == 0 ? 1 : h;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Makes room for `count` entries without growing again.
  void reserve(size_t count) {
    size_t needed = minimumCapacityFor(count);
    if (needed > slots_.size()) rehash(needed);
  }

  void clear() {
    slots_.clear();
    size_ = 0;
  }

  /// Starts loading the slot where `hash` is looked up first. A caller about to look one name
  /// up in several tables prefetches all of them, so their cache misses overlap.
  void prefetch(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & mask()]);
  }

  V* find(std::string_view key) { return find(key, hashOf(key)); }
  const V* find(std::string_view key) const { return find(key, hashOf(key)); }
  V* find(std::string_view key, uint64_t hash) {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& slot = slots_[i];
      if (slot.hash == 0) return nullptr;
      if (slot.hash == hash && slot.key == key) return &slot.value;
    }
  }
  const V* find(std::string_view key, uint64_t hash) const {
    return const_cast<NameTable*>(this)->find(key, hash);
  }
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  /// The value for `key`, inserted value-initialised when absent.
  V& operator[](std::string_view key) { return findOrInsert(key, hashOf(key)); }
  V& findOrInsert(std::string_view key, uint64_t hash) {
    if ((size_ + 1) * kMaxLoadDen > slots_.size() * kMaxLoadNum) {
      rehash(slots_.empty() ? kMinCapacity : slots_.size() * 2);
    }
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& slot = slots_[i];
      if (slot.hash == 0) {
        slot.hash = hash;
        slot.key.assign(key);
        slot.value = V();
        ++size_;
        return slot.value;
      }
      if (slot.hash == hash && slot.key == key) return slot.value;
    }
  }

  bool erase(std::string_view key) { return erase(key, hashOf(key)); }
  bool erase(std::string_view key, uint64_t hash) {
    if (slots_.empty()) return false;
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& slot = slots_[i];
      if (slot.hash == 0) return false;
      if (slot.hash == hash && slot.key == key) {
        eraseSlot(i);
        return true;
      }
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    std::string key;
    V value{};
  };
  // At most 7/10 full: linear probing stays short, and slots are contiguous so a probe that
  // continues mostly stays in the cache line it started in.
  static constexpr size_t kMaxLoadNum = 7;
  static constexpr size_t kMaxLoadDen = 10;
  static constexpr size_t kMinCapacity = 16;

  size_t mask() const { return slots_.size() - 1; }

  static size_t minimumCapacityFor(size_t count) {
    size_t capacity = kMinCapacity;
    while (count * kMaxLoadDen > capacity * kMaxLoadNum) capacity *= 2;
    return capacity;
  }

  void rehash(size_t capacity) {
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    for (Slot& slot : old) {
      if (slot.hash == 0) continue;
      size_t i = slot.hash & mask();
      while (slots_[i].hash != 0) i = (i + 1) & mask();
      slots_[i] = std::move(slot);
    }
  }

  // Backward-shift deletion: entries after the hole that probed past it move back, so lookups
  // never need tombstones and the table never degrades after many erases.
  void eraseSlot(size_t hole) {
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
    Slot& freed = slots_[hole];
    freed.hash = 0;
    freed.key.clear();
    freed.value = V();
    --size_;
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace qopt
