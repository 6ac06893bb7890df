// InlineVector: a vector of pointers that keeps its first N elements inside the object.
//
// Most nodes have one to three inputs and one output. Kept in a std::vector, each list is a
// separate heap block: a pass that reads every node's inputs misses the cache once for the node
// and once more for its inputs, and creating or erasing a node calls malloc and free. Inline, the
// lists share the node's cache lines; longer lists move to the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

namespace qopt {

template <class T, size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T>, "elements are moved with memmove");

 public:
  InlineVector() = default;
  InlineVector(const InlineVector&) = delete;
  InlineVector& operator=(const InlineVector&) = delete;
  /// Takes `other`'s elements (its heap block, when it has one); `other` is left empty.
  InlineVector(InlineVector&& other) noexcept : size_(other.size_) {
    if (other.data_ != other.inline_) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = N;
    } else {
      std::memcpy(inline_, other.inline_, other.size_ * sizeof(T));
    }
    other.size_ = 0;
  }
  ~InlineVector() {
    if (data_ != inline_) delete[] data_;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  operator std::span<T const>() const { return {data_, size_}; }

  void push_back(T value) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data_[size_++] = value;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  /// Grows to `count` elements filled with `fill`, or shrinks.
  void resize(size_t count, T fill) {
    reserve(count);
    for (size_t i = size_; i < count; ++i) data_[i] = fill;
    size_ = static_cast<uint32_t>(count);
  }
  void insert(size_t pos, T value) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    std::memmove(data_ + pos + 1, data_ + pos, (size_ - pos) * sizeof(T));
    data_[pos] = value;
    ++size_;
  }
  void erase(size_t pos) {
    std::memmove(data_ + pos, data_ + pos + 1, (size_ - pos - 1) * sizeof(T));
    --size_;
  }
  void reserve(size_t count) {
    if (count <= capacity_) return;
    T* grown = new T[count];
    std::memcpy(grown, data_, size_ * sizeof(T));
    if (data_ != inline_) delete[] data_;
    data_ = grown;
    capacity_ = static_cast<uint32_t>(count);
  }

 private:
  T* data_ = inline_;
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  T inline_[N];
};

}  // namespace qopt
