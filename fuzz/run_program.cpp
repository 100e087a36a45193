#include "fuzz/run_program.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/executor/program.h"

namespace ember::fuzz {
namespace {
// Caps keep a hostile plan from asking for gigabytes.
constexpr int64_t kMaxPlannedBytes = 64 << 20;
constexpr size_t kMethodPoolBytes = 4 << 20;
}  // namespace

int run_program_bytes(const uint8_t* data, size_t size) {
  // FlatBuffers wants aligned data; fuzzer inputs are not.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size + 64]);
  uint8_t* aligned = copy.get() + (64 - reinterpret_cast<uintptr_t>(copy.get()) % 64) % 64;
  if (size > 0) std::memcpy(aligned, data, size);
  BufferDataLoader loader(aligned, size);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) return 0;
  int ok = 0;
  std::vector<uint8_t> pool(kMethodPoolBytes);
  for (size_t m = 0; m < program->num_methods(); ++m) {
    const char* name = program->get_method_name(m).get();
    Result<MethodMeta> meta = program->method_meta(name);
    if (!meta.ok()) continue;
    int64_t total = 0;
    for (size_t i = 0; i < meta->num_planned_buffers(); ++i) total += meta->planned_buffer_size(i).get();
    if (total > kMaxPlannedBytes) continue;
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<std::span<uint8_t>> spans;
    for (size_t i = 0; i < meta->num_planned_buffers(); ++i) {
      buffers.emplace_back(static_cast<size_t>(meta->planned_buffer_size(i).get()));
      spans.emplace_back(buffers.back().data(), buffers.back().size());
    }
    MemoryAllocator allocator(pool.data(), pool.size());
    MemoryManager mm(&allocator, std::span<std::span<uint8_t>>(spans));
    Result<Method> method = program->load_method(name, &mm);
    if (!method.ok()) continue;
    // Inputs: their planned memory is already zero; set each tensor input to
    // a zero tensor of its own shape so execute() is reachable.
    bool inputs_ok = true;
    std::vector<std::vector<uint8_t>> input_data;
    for (size_t i = 0; i < method->inputs_size() && inputs_ok; ++i) {
      const EValue* v = method->get_input(i).get();
      if (!v->is_tensor()) continue;
      const Tensor& t = v->to_tensor();
      // An input the program does not plan may declare any size (the caller
      // brings the memory); the harness only feeds modest ones.
      if (t.nbytes() > static_cast<size_t>(kMaxPlannedBytes)) {
        inputs_ok = false;
        break;
      }
      input_data.emplace_back(t.nbytes() + 1, 0);
      Tensor in = t;
      in.data = input_data.back().data();
      inputs_ok = method->set_input(i, in) == Error::Ok;
    }
    if (inputs_ok && method->execute() == Error::Ok) ++ok;
  }
  return ok;
}

}  // namespace ember::fuzz
