#include "extension/devtools/profile_file.h"

#include <cstdio>
#include <cstring>

#include <flatbuffers/flatbuffers.h>

#include "extension/bundled_program/bundled_program.h"
#include "extension/devtools/instruction_info.h"
#include "schema/profile_generated.h"

namespace ember::extension {
namespace {

// 64-bit hash of bytes, a word at a time (identity, not security).
uint64_t hash_bytes(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ (n * 0x9e3779b97f4a7c15ull);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 32;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

std::string shape_of(const Step& step) {
  if (step.kind != Step::Kind::Kernel || step.num_args == 0) return "";
  const EValue* out = step.args[step.num_args - 1];
  if (out == nullptr || !out->is_tensor()) return "";
  std::string s = "[";
  const Tensor& t = out->to_tensor();
  for (int32_t d = 0; d < t.dim; ++d) s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<ProgramFingerprint> program_fingerprint(const void* data, size_t size) {
  const void* program = nullptr;
  size_t program_size = 0;
  EMBER_TRY(get_program_data(data, size, &program, &program_size));
  return ProgramFingerprint{program_size,
                            hash_bytes(static_cast<const uint8_t*>(program), program_size)};
}

const ProfileInstruction* ProfileData::instruction(uint32_t index) const {
  for (const ProfileInstruction& ins : instructions) {
    if (ins.index == index) return &ins;
  }
  return nullptr;
}

ProfileBuilder::ProfileBuilder(const Method& method, ProgramFingerprint program,
                               uint32_t threads) {
  data_.method = method.name();
  data_.program = program;
  data_.threads = threads;
  data_.num_instructions = static_cast<uint32_t>(method.num_steps());
  const ember_fb::ExecutionPlan* plan = method.execution_plan();
  for (uint32_t k = 0; k < data_.num_instructions; ++k) {
    const Step& step = method.step(k);
    if (step.kind != Step::Kind::Kernel && step.kind != Step::Kind::Delegate) continue;
    data_.instructions.push_back({k, step.kind == Step::Kind::Delegate,
                                  step.op_name != nullptr ? step.op_name : "?",
                                  instruction_node(plan, k), instruction_source(plan, k),
                                  shape_of(step)});
  }
}

void ProfileBuilder::add_run(const ProfileEvent* events, size_t count) {
  std::vector<ProfileRecord>& run = data_.runs.emplace_back();
  run.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const ProfileEvent& e = events[i];
    int32_t name = -1;
    if (e.name != nullptr) {
      for (size_t n = 0; n < data_.names.size() && name < 0; ++n) {
        if (data_.names[n] == e.name) name = static_cast<int32_t>(n);
      }
      if (name < 0) {
        name = static_cast<int32_t>(data_.names.size());
        data_.names.emplace_back(e.name);
      }
    }
    run.push_back({e.instruction, name, e.start_ns, e.end_ns});
  }
}

std::vector<uint8_t> serialize_profile(const ProfileData& p) {
  flatbuffers::FlatBufferBuilder b(1024);
  std::vector<flatbuffers::Offset<ember_prof::Instruction>> instructions;
  for (const ProfileInstruction& ins : p.instructions) {
    instructions.push_back(ember_prof::CreateInstruction(
        b, ins.index,
        ins.delegate ? ember_prof::InstructionKind::Delegate : ember_prof::InstructionKind::Kernel,
        b.CreateString(ins.op), b.CreateString(ins.node), b.CreateString(ins.source),
        b.CreateString(ins.output_shape)));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  for (const std::string& n : p.names) names.push_back(b.CreateString(n));
  std::vector<flatbuffers::Offset<ember_prof::Run>> runs;
  for (const std::vector<ProfileRecord>& run : p.runs) {
    std::vector<ember_prof::Event> events;
    events.reserve(run.size());
    for (const ProfileRecord& r : run) {
      events.emplace_back(r.instruction, r.name, r.start_ns, r.end_ns);
    }
    runs.push_back(ember_prof::CreateRun(b, b.CreateVectorOfStructs(events)));
  }
  const auto root = ember_prof::CreateProfile(
      b, kProfileVersion, b.CreateString(p.method), p.program.size, p.program.hash,
      p.num_instructions, p.threads, b.CreateVector(instructions), b.CreateVector(names),
      b.CreateVector(runs), p.dropped_events);
  ember_prof::FinishProfileBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

bool is_profile_file(const void* data, size_t size) {
  return data != nullptr && size >= 8 &&
         ember_prof::ProfileBufferHasIdentifier(data);
}

Result<ProfileData> read_profile(const void* data, size_t size) {
  EMBER_CHECK_OR_RETURN(is_profile_file(data, size), Error::InvalidProgram,
                        "not a profile file (no \"EPF1\" identifier in its first 8 of %zu bytes)",
                        size);
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(data), size);
  EMBER_CHECK_OR_RETURN(ember_prof::VerifyProfileBuffer(verifier), Error::InvalidProgram,
                        "profile file: corrupt (the FlatBuffer verifier refused its %zu bytes)",
                        size);
  const ember_prof::Profile* fb = ember_prof::GetProfile(data);
  EMBER_CHECK_OR_RETURN(fb->version() == kProfileVersion, Error::NotSupported,
                        "profile file: version %u, this reader reads version %u", fb->version(),
                        kProfileVersion);
  EMBER_CHECK_OR_RETURN(fb->method() != nullptr && fb->instructions() != nullptr &&
                            fb->runs() != nullptr,
                        Error::InvalidProgram,
                        "profile file: no %s", fb->method() == nullptr ? "method name"
                        : fb->instructions() == nullptr ? "instruction table" : "runs");
  ProfileData p;
  p.method = fb->method()->str();
  p.program = {fb->program_size(), fb->program_hash()};
  p.num_instructions = fb->num_instructions();
  p.threads = fb->threads();
  p.dropped_events = fb->dropped_events();
  std::vector<bool> known(p.num_instructions, false);
  for (uint32_t i = 0; i < fb->instructions()->size(); ++i) {
    const ember_prof::Instruction* ins = fb->instructions()->Get(i);
    EMBER_CHECK_OR_RETURN(ins->index() < p.num_instructions && !known[ins->index()],
                          Error::InvalidProgram,
                          "profile file: instruction entry %u names instruction %u (%s; the "
                          "method has %u)", i, ins->index(),
                          ins->index() < p.num_instructions ? "twice" : "out of range",
                          p.num_instructions);
    known[ins->index()] = true;
    auto str = [](const flatbuffers::String* s) { return s != nullptr ? s->str() : std::string(); };
    p.instructions.push_back({ins->index(), ins->kind() == ember_prof::InstructionKind::Delegate,
                              str(ins->op()), str(ins->node()), str(ins->source()),
                              str(ins->output_shape())});
  }
  if (fb->names() != nullptr) {
    for (uint32_t i = 0; i < fb->names()->size(); ++i) {
      const flatbuffers::String* n = fb->names()->Get(i);
      EMBER_CHECK_OR_RETURN(n != nullptr, Error::InvalidProgram, "profile file: event name %u is "
                            "missing", i);
      p.names.push_back(n->str());
    }
  }
  for (uint32_t r = 0; r < fb->runs()->size(); ++r) {
    const auto* events = fb->runs()->Get(r)->events();
    std::vector<ProfileRecord>& run = p.runs.emplace_back();
    for (uint32_t i = 0; events != nullptr && i < events->size(); ++i) {
      const ember_prof::Event* e = events->Get(i);
      const uint32_t k = e->instruction();
      EMBER_CHECK_OR_RETURN(k < p.num_instructions && known[k], Error::InvalidProgram,
                            "profile file: run %u event %u names instruction %u, which the "
                            "profile's instruction table does not hold", r, i, k);
      EMBER_CHECK_OR_RETURN(e->name() >= -1 && e->name() < static_cast<int64_t>(p.names.size()),
                            Error::InvalidProgram,
                            "profile file: run %u event %u names event name %d (%zu names)", r,
                            i, e->name(), p.names.size());
      EMBER_CHECK_OR_RETURN(e->end_ns() >= e->start_ns(), Error::InvalidProgram,
                            "profile file: run %u event %u ends before it starts", r, i);
      EMBER_CHECK_OR_RETURN(e->name() < 0 || p.instruction(k)->delegate, Error::InvalidProgram,
                            "profile file: run %u event %u is a delegate event inside "
                            "instruction %u, a kernel", r, i, k);
      run.push_back({k, e->name(), e->start_ns(), e->end_ns()});
    }
  }
  return p;
}

Error check_profile_program(const ProfileData& profile, ProgramFingerprint fingerprint) {
  EMBER_CHECK_OR_RETURN(
      profile.program.size == fingerprint.size && profile.program.hash == fingerprint.hash,
      Error::InvalidArgument,
      "the profile is of another program: it was taken of a %llu-byte program (hash %s), this "
      "one has %llu bytes (hash %s)",
      static_cast<unsigned long long>(profile.program.size), hex(profile.program.hash).c_str(),
      static_cast<unsigned long long>(fingerprint.size), hex(fingerprint.hash).c_str());
  return Error::Ok;
}

bool write_profile_file(const std::string& path, const ProfileData& profile, std::string* error) {
  const std::vector<uint8_t> bytes = serialize_profile(profile);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    *error = "cannot write " + path;
    return false;
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) {
    *error = "cannot finish writing " + path;
    return false;
  }
  return true;
}

}  // namespace ember::extension
