// Per-thread scratch memory for the convolution kernels (im2col columns, padded planes).
#pragma once

#include <cstdint>
#include <vector>

namespace qopt::interp {

/// At least `elements` T of this thread's scratch buffer, kept between calls: a fresh megabyte
/// per convolution would cost a page fault per 4 KiB on every run. The contents are garbage, and
/// the next call on the same thread may move the buffer.
template <class T>
T* threadScratch(int64_t elements) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<size_t>(elements)) buffer.resize(static_cast<size_t>(elements));
  return buffer.data();
}

}  // namespace qopt::interp
