#include "runtime/executor/event_tracer.h"

#include <time.h>

namespace ember {

uint64_t EventTracer::now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ember
