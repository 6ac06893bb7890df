#include "qopt/ir/ValueIndex.h"

#include "qopt/ir/Graph.h"

namespace qopt {

void ValueIndex::reserve(size_t count) {
  slots_.reserve(count + pendingCount_);
}

void ValueIndex::insert(Value* value, uint64_t hash) {
  for (size_t i = 0; i < pendingCount_; ++i) {
    if (pending_[i].hash == hash && pending_[i].value == value) {
      // A value erased and then made again at the same address under the same name: the entry
      // still in the table stands for it again.
      pending_[i] = pending_[--pendingCount_];
      return;
    }
  }
  // Never matching: a second holder of a name (a sibling subgraph's) gets a slot of its own.
  slots_.findOrAdd(hash, [](const Slot&) { return false; }).first->value = value;
}

void ValueIndex::erase(const Value* value, uint64_t hash) {
  if (pendingCount_ == kMaxPending) flush();
  pending_[pendingCount_++] = {hash, value};
}

bool ValueIndex::isPending(const Slot& slot) const {
  for (size_t i = 0; i < pendingCount_; ++i) {
    if (pending_[i].hash == slot.hash && pending_[i].value == slot.value) return true;
  }
  return false;
}

void ValueIndex::flush() {
  for (size_t i = 0; i < pendingCount_; ++i) slots_.prefetch(pending_[i].hash);
  for (size_t i = 0; i < pendingCount_; ++i) {
    const Pending& p = pending_[i];
    Slot* slot = slots_.find(p.hash, [&](const Slot& s) { return s.value == p.value; });
    if (slot) slots_.erase(slot);
  }
  pendingCount_ = 0;
}

Value* ValueIndex::find(std::string_view name, uint64_t hash, const Graph* graph) const {
  // Entries waiting to leave are skipped before their value, which may be gone, is read.
  Slot* slot = slots_.find(hash, [&](const Slot& s) {
    if (pendingCount_ && isPending(s)) return false;
    return (!graph || s.value->graph() == graph) && s.value->name() == name;
  });
  return slot ? slot->value : nullptr;
}

}  // namespace qopt
