// ValueIndex: the model's index of its values by name, over every graph, subgraphs included.
//
// One index serves both questions the IR asks of a name: "is it used anywhere in the model"
// (fresh names, renames) and "which value of this graph holds it" (import, lookups). A slot is
// 16 bytes, the name's hash and the value, whose own name is the key: a model of a million
// values needs 32 MB of slots, not the hundreds a table with inline keys per graph plus a
// model-wide one took. Creating a value costs one probe, and erasing compares pointers, never
// characters.
//
// Erasing is deferred: a pass that erases many values (dce, a fusion) would otherwise wait for
// one cache miss per value on a large model, one after the other. Erased entries wait in a short
// list and leave the table together, their slots prefetched first, so the misses overlap. Until
// then a lookup skips them by (hash, pointer), without reading the value, whose memory may
// already hold another one.
//
// Names are unique in a graph and its enclosing graphs (ONNX forbids shadowing), but sibling
// subgraphs (an If's two branches) may both define one: the index is a multimap, and a lookup
// names the graph it asks for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "qopt/ir/HashSlots.h"

namespace qopt {

class Graph;
class Value;

class ValueIndex {
 public:
  size_t size() const { return slots_.size() - pendingCount_; }
  void reserve(size_t count);

  /// Adds `value` under its name, whose hash (hashName) is `hash`.
  void insert(Value* value, uint64_t hash);
  /// Removes `value`, indexed under a name whose hash is `hash` (it must be there). The value
  /// may be destroyed right after: the index never reads it again.
  void erase(const Value* value, uint64_t hash);
  /// The value named `name` defined in `graph`, or in any graph when `graph` is null.
  Value* find(std::string_view name, uint64_t hash, const Graph* graph) const;

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    Value* value = nullptr;
  };
  struct Pending {
    uint64_t hash;
    const Value* value;
  };
  static constexpr size_t kMaxPending = 32;

  bool isPending(const Slot& slot) const;
  void flush();

  HashSlots<Slot> slots_;
  std::array<Pending, kMaxPending> pending_;
  size_t pendingCount_ = 0;
};

}  // namespace qopt
