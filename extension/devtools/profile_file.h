// Profile files (`.eprof`, schema/profile.fbs, #19): the events of a
// method's profiled runs, with the instructions they name (operator, FX
// node, source line) and the identity of the program they were taken of.
// ember-run --profile-out and the Python binding write them; the Inspector
// and ember-inspect --plot --profile read them. Tools side: STL allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/executor/event_tracer.h"
#include "runtime/executor/method.h"

namespace ember::extension {

inline constexpr uint32_t kProfileVersion = 1;

/// Size and a 64-bit hash of a program's bytes: a profile names the program
/// it was taken of with it.
struct ProgramFingerprint {
  uint64_t size = 0;
  uint64_t hash = 0;
};

/// The fingerprint of the program in `data`: a `.pte`, or the program inside
/// a `.bpte` (verified first; fails with the reason when it is not one).
Result<ProgramFingerprint> program_fingerprint(const void* data, size_t size);

struct ProfileInstruction {
  uint32_t index = 0;
  bool delegate = false;
  std::string op, node, source, output_shape;
};

/// One timed span: `name` < 0 is instruction `instruction` itself, >= 0 an
/// event its delegate logged (names[name]).
struct ProfileRecord {
  uint32_t instruction = 0;
  int32_t name = -1;
  uint64_t start_ns = 0, end_ns = 0;
};

/// What a profile file holds.
struct ProfileData {
  std::string method;
  ProgramFingerprint program;
  uint32_t num_instructions = 0;
  uint32_t threads = 0;
  std::vector<ProfileInstruction> instructions;  // the kernel and delegate ones
  std::vector<std::string> names;                // delegate events' names
  std::vector<std::vector<ProfileRecord>> runs;
  uint64_t dropped_events = 0;

  /// The instruction `index` names, or null.
  const ProfileInstruction* instruction(uint32_t index) const;
};

/// Builds a profile from an EventTracer's events, one run at a time.
class ProfileBuilder {
 public:
  /// Reads `method`'s kernel and delegate instructions (operator, node,
  /// source line, output shape); `threads`: the pool's thread count.
  ProfileBuilder(const Method& method, ProgramFingerprint program, uint32_t threads);
  /// Adds one execute()'s events (the tracer's events it recorded).
  void add_run(const ProfileEvent* events, size_t count);
  void add_dropped(size_t count) { data_.dropped_events += count; }
  const ProfileData& data() const { return data_; }

 private:
  ProfileData data_;
};

/// The profile as a FlatBuffer (identifier "EPF1").
std::vector<uint8_t> serialize_profile(const ProfileData& profile);

/// True when `data` starts like a profile file (identifier "EPF1").
bool is_profile_file(const void* data, size_t size);

/// Reads a profile file, refusing what is not one: the FlatBuffer verifier,
/// the version, and every event against the instructions and names it
/// holds. The error message names what is wrong.
Result<ProfileData> read_profile(const void* data, size_t size);

/// Ok when `profile` was taken of the program with `fingerprint`; an error
/// naming both sizes and hashes otherwise.
Error check_profile_program(const ProfileData& profile, ProgramFingerprint fingerprint);

/// Writes the profile to `path`; false (with `*error`) when it cannot.
bool write_profile_file(const std::string& path, const ProfileData& profile, std::string* error);

}  // namespace ember::extension
