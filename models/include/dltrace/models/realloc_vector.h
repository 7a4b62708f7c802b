// SPDX-License-Identifier: GPL-2.0-only
// ReallocVector: std::vector's interface for trivially copyable elements,
// grown and shrunk with realloc, for the per-endpoint steps of a schedule.
//
// Why: lowering appends each endpoint's steps one at a time, to hundreds of
// KiB per endpoint and 10 GiB at 16,384 ranks. std::vector moves them into a
// new block at every doubling and again when shrunk to fit; a block that
// large is mapped (mmap), so every new one is fresh pages the kernel zeroes
// first: 30 % of lowering a 16,384-rank job (perf: clear_page_erms). realloc
// of a mapped block moves its pages (mremap) instead of copying them, and
// shrinks in place, so each page is zeroed once.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

namespace dltrace::models {

template <typename T>
class ReallocVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "ReallocVector moves its elements with realloc");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  ReallocVector() = default;
  ReallocVector(std::initializer_list<T> list) { insert(end(), list.begin(), list.end()); }
  ReallocVector(const ReallocVector& other) { insert(end(), other.begin(), other.end()); }
  ReallocVector(ReallocVector&& other) noexcept { swap(other); }
  ReallocVector& operator=(const ReallocVector& other) {
    if (this != &other) {
      clear();
      insert(end(), other.begin(), other.end());
    }
    return *this;
  }
  ReallocVector& operator=(ReallocVector&& other) noexcept {
    ReallocVector(std::move(other)).swap(*this);
    return *this;
  }
  ReallocVector& operator=(std::initializer_list<T> list) {
    clear();
    insert(end(), list.begin(), list.end());
    return *this;
  }
  ~ReallocVector() { std::free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // VALUE may be an element, which the growth moves
      Reallocate(Grown(size_ + 1));
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = value;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity_) Reallocate(n);
  }
  // New elements are value-initialised, as std::vector's are.
  void resize(size_t n) { resize(n, T()); }
  void resize(size_t n, const T& value) {
    if (n > size_) {
      const T copy = value;
      reserve(n);
      for (size_t i = size_; i < n; ++i) data_[i] = copy;
    }
    size_ = n;
  }
  // Gives the spare capacity back (in place: realloc never copies to shrink).
  void shrink_to_fit() {
    if (capacity_ > size_) Reallocate(size_);
  }

  // Inserts [FIRST, LAST) before POS (which may be end()); the range may
  // not lie in this vector.
  template <typename It>
  T* insert(const T* pos, It first, It last) {
    const size_t at = size_t(pos - data_), n = size_t(std::distance(first, last));
    if (n == 0) return data_ + at;
    if (size_ + n > capacity_) Reallocate(Grown(size_ + n));
    std::memmove(static_cast<void*>(data_ + at + n), data_ + at, (size_ - at) * sizeof(T));
    for (size_t i = at; first != last; ++first, ++i) data_[i] = *first;
    size_ += n;
    return data_ + at;
  }
  T* insert(const T* pos, const T& value) {
    const T copy = value;
    return insert(pos, &copy, &copy + 1);
  }

  void swap(ReallocVector& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }
  friend bool operator==(const ReallocVector& a, const ReallocVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (!(a.data_[i] == b.data_[i])) return false;
    return true;
  }
  friend bool operator!=(const ReallocVector& a, const ReallocVector& b) { return !(a == b); }

 private:
  // std::vector's growth: double, or what is asked for if that is more.
  size_t Grown(size_t needed) const {
    const size_t doubled = capacity_ ? 2 * capacity_ : 4;
    return doubled > needed ? doubled : needed;
  }
  void Reallocate(size_t n) {
    if (n == 0) {
      std::free(data_);
      data_ = nullptr;
    } else {
      void* p = std::realloc(static_cast<void*>(data_), n * sizeof(T));
      if (!p) throw std::bad_alloc();
      data_ = static_cast<T*>(p);
    }
    capacity_ = n;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace dltrace::models
