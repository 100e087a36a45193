// What ember-run --profile prints and writes: a table per operator over the
// events an EventTracer recorded, and a Chrome trace (Perfetto opens it).
#pragma once

#include <string>

#include "runtime/executor/event_tracer.h"
#include "runtime/executor/method.h"

namespace ember::tools {

/// Per operator: total and mean time, share of the runs' wall time, calls
/// per run, output shapes; slowest first.
void print_profile(const Method& method, const EventTracer& tracer, int runs, double wall_ms);

/// The events as Chrome trace JSON ("X" events, microseconds); false and
/// `error` set when the file cannot be written.
bool write_chrome_trace(const std::string& path, const Method& method, const EventTracer& tracer,
                        std::string* error, uint64_t program_size = 0,
                        uint64_t program_hash = 0);

}  // namespace ember::tools
