// Per-instruction timing for profiles (ember-run --profile): the caller owns
// the event storage; Method::execute records one event per kernel or
// delegate instruction it runs while a tracer is set, and a delegate may add
// events of its own inside its instruction (its inner operators:
// BackendExecutionContext::log_event). Off (no tracer), it costs one pointer
// test per instruction; on, two clock reads. No heap: size the storage from
// Method::profile_events_per_run() (events that do not fit are counted: dropped()).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

struct ProfileEvent {
  uint32_t instruction = 0;  // index into the method's steps
  uint64_t start_ns = 0;     // monotonic clock
  uint64_t end_ns = 0;
  /// Null for the instruction itself; for an event a delegate logged inside
  /// instruction `instruction`, its name (lives as long as the method).
  const char* name = nullptr;
};

class EventTracer {
 public:
  static constexpr size_t kNoSlot = ~size_t{0};

  EventTracer(ProfileEvent* events, size_t capacity) : events_(events), capacity_(capacity) {}

  void record(uint32_t instruction, uint64_t start_ns, uint64_t end_ns,
              const char* name = nullptr) {
    if (size_ < capacity_) {
      events_[size_++] = {instruction, start_ns, end_ns, name};
    } else {
      ++dropped_;
    }
  }
  /// Opens instruction `instruction`'s event (so the events a delegate logs
  /// while it runs come after it): its slot, or kNoSlot when full.
  size_t begin(uint32_t instruction, uint64_t start_ns) {
    if (size_ >= capacity_) {
      ++dropped_;
      return kNoSlot;
    }
    events_[size_] = {instruction, start_ns, start_ns, nullptr};
    return size_++;
  }
  void end(size_t slot, uint64_t end_ns) {
    if (slot != kNoSlot) events_[slot].end_ns = end_ns;
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
