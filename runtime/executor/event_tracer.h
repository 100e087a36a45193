// Per-instruction timing for profiles (ember-run --profile): the caller owns
// the event storage; Method::execute records one event per kernel or
// delegate instruction it runs while a tracer is set. Off (no tracer), it
// costs one pointer test per instruction; on, two clock reads. No heap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

struct ProfileEvent {
  uint32_t instruction = 0;  // index into the method's steps
  uint64_t start_ns = 0;     // monotonic clock
  uint64_t end_ns = 0;
};

class EventTracer {
 public:
  EventTracer(ProfileEvent* events, size_t capacity) : events_(events), capacity_(capacity) {}

  void record(uint32_t instruction, uint64_t start_ns, uint64_t end_ns) {
    if (size_ < capacity_) {
      events_[size_++] = {instruction, start_ns, end_ns};
    } else {
      ++dropped_;
    }
  }
  const ProfileEvent* events() const { return events_; }
  size_t size() const { return size_; }
  /// Events that did not fit in the storage.
  size_t dropped() const { return dropped_; }
  void clear() { size_ = dropped_ = 0; }

  /// The monotonic clock, in nanoseconds.
  static uint64_t now_ns();

 private:
  ProfileEvent* events_;
  size_t capacity_;
  size_t size_ = 0;
  size_t dropped_ = 0;
};

}  // namespace ember
