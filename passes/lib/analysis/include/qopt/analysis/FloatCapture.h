// An interpreter observer of a fixed set of values that hands every floating-point array computed
// for them to one callback: what observers need that only fold each value's numbers into their
// own per-value statistics (magnitudes, ranges).
#pragma once

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Graph.h"

namespace qopt::analysis {

class FloatCapture : public interp::CaptureObserver {
 public:
  using OnFloat = std::function<void(const Value& value, const interp::Array& array)>;

  FloatCapture(std::unordered_set<const Value*> wanted, OnFloat onFloat)
      : wanted_(std::move(wanted)), onFloat_(std::move(onFloat)) {}
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const interp::Array& array) override {
    if (isFloatingPoint(array.dataType())) onFloat_(value, array);
  }

 private:
  std::unordered_set<const Value*> wanted_;
  OnFloat onFloat_;
};

/// A FloatCapture whose callback folds each array into per-value `sums` of type T (what
/// observeSamples hands to its fold for each sample).
template <class T>
class FloatFold : public interp::CaptureObserver {
 public:
  using Fold = void (*)(T& into, const interp::Array& array);

  FloatFold(const std::unordered_set<const Value*>& wanted, Fold fold)
      : wanted_(wanted), fold_(fold) {}
  const std::unordered_set<const Value*>& wanted() const override { return wanted_; }
  void captured(const Value& value, const interp::Array& array) override {
    if (isFloatingPoint(array.dataType())) fold_(sums[&value], array);
  }

  std::unordered_map<const Value*, T> sums;

 private:
  const std::unordered_set<const Value*>& wanted_;
  Fold fold_;
};

}  // namespace qopt::analysis
