// NameTable: a hash table from names to small values, for the IR's name bookkeeping (node
// names, fresh-name counters).
//
// std::unordered_map<std::string, V> costs two or three cache misses per lookup on a large
// model (bucket array, then a separately allocated node per entry) and allocates on every
// insert. This table keeps each key inline in its slot beside the full hash (HashSlots), so a
// lookup usually costs one miss, a miss on a long name never touches its characters, and
// lookups take a string_view without building a std::string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "qopt/ir/HashSlots.h"

namespace qopt {

template <class V>
class NameTable {
 public:
  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.size() == 0; }
  /// Makes room for `count` entries without growing again.
  void reserve(size_t count) { slots_.reserve(count); }
  void clear() { slots_.clear(); }

  V* find(std::string_view key) {
    Slot* slot = slots_.find(hashName(key), KeyIs{key});
    return slot ? &slot->value : nullptr;
  }
  const V* find(std::string_view key) const { return const_cast<NameTable*>(this)->find(key); }
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  /// The value for `key`, inserted value-initialised when absent.
  V& operator[](std::string_view key) {
    auto [slot, added] = slots_.findOrAdd(hashName(key), KeyIs{key});
    if (added) slot->key.assign(key);
    return slot->value;
  }

  bool erase(std::string_view key) {
    Slot* slot = slots_.find(hashName(key), KeyIs{key});
    if (!slot) return false;
    slots_.erase(slot);
    return true;
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    std::string key;
    V value{};
  };
  struct KeyIs {
    std::string_view key;
    bool operator()(const Slot& slot) const { return slot.key == key; }
  };

  HashSlots<Slot> slots_;
};

}  // namespace qopt
