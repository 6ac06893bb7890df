#include "qopt/analysis/ComparisonQueue.h"

#include <utility>

namespace qopt::analysis {

namespace {

size_t bytesOf(const interp::Array& a) {
  return a.valid() ? a.byteSize() : 0;
}

}  // namespace

ComparisonQueue::ComparisonQueue(size_t maxPendingBytes, bool background)
    : maxPending_(maxPendingBytes) {
  if (background && std::thread::hardware_concurrency() > 1) {
    worker_ = std::thread([this] { work(); });
  }
}

ComparisonQueue::~ComparisonQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ComparisonQueue::rethrow() {
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }
}

void ComparisonQueue::push(ErrorAccumulator& into, interp::Array reference, interp::Array actual,
                           std::string label) {
  if (!worker_.joinable()) {
    into.add(reference, actual, label);
    return;
  }
  Item item{&into, std::move(reference), std::move(actual), std::move(label), 0};
  item.bytes = bytesOf(item.reference) + bytesOf(item.actual);
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    return error_ || (items_.empty() && !busy_) || pendingBytes_ + item.bytes <= maxPending_;
  });
  rethrow();
  pendingBytes_ += item.bytes;
  items_.push_back(std::move(item));
  lock.unlock();
  changed_.notify_all();
}

void ComparisonQueue::drain() {
  if (worker_.joinable()) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return error_ || (items_.empty() && !busy_); });
    // After an error the rest is dropped: the run stops with that error.
    for (const Item& item : items_) pendingBytes_ -= item.bytes;
    items_.clear();
    rethrow();
  }
}

void ComparisonQueue::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || (!items_.empty() && !error_); });
    if (stopping_) return;
    Item item = std::move(items_.front());
    items_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      item.into->add(item.reference, item.actual, item.label);
    } catch (...) {
      failure = std::current_exception();
    }
    const size_t bytes = item.bytes;
    item = Item{};  // the arrays go back to their pool outside the lock
    lock.lock();
    busy_ = false;
    pendingBytes_ -= bytes;
    if (failure && !error_) error_ = failure;
    changed_.notify_all();
  }
}

}  // namespace qopt::analysis
