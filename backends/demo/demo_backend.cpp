// The tutorial's demo delegate: interprets the "EDM1" blob (see README.md).
#include <cmath>
#include <cstring>

#include "runtime/backend/backend_interface.h"

namespace ember::backends::demo {
namespace {

constexpr char kMagic[4] = {'E', 'D', 'M', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kUnused = 0xFFFFFFFFu;
constexpr uint32_t kMaxCount = 1u << 20;  // Bounds every count before any allocation.

enum Opcode : uint8_t { kSin = 1, kAdd = 2, kSub = 3, kMul = 4, kMm = 5 };
// Each instruction's event name in profiles (BackendExecutionContext::log_event).
constexpr const char* kOpNames[] = {"?", "demo::sin", "demo::add", "demo::sub", "demo::mul",
                                    "demo::mm"};

struct Slot {
  int32_t rank = 0;
  int32_t sizes[kTensorMaxDim] = {};
  int64_t numel = 1;
  float* scratch = nullptr;  // Intermediates only.
  float* data = nullptr;     // Bound at execute.
};

struct Instruction {
  uint8_t opcode;
  uint32_t a, b, out;
  float alpha;
};

struct Compiled {
  Slot* slots;
  uint32_t num_slots;
  uint32_t* inputs;
  uint32_t num_inputs;
  uint32_t* outputs;
  uint32_t num_outputs;
  Instruction* program;
  uint32_t num_instructions;
};

// Bounds-checked little-endian reader over the blob.
class Reader {
 public:
  Reader(const void* data, size_t size) : p_(static_cast<const uint8_t*>(data)), size_(size) {}
  bool read(void* out, size_t n) {
    if (n > size_ - pos_) return false;
    std::memcpy(out, p_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool u8(uint8_t* v) { return read(v, 1); }
  bool u32(uint32_t* v) {
    uint8_t b[4];
    if (!read(b, 4)) return false;
    *v = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
    return true;
  }
  size_t remaining() const { return size_ - pos_; }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
};

// True when `in` broadcasts to `out` (NumPy rules, aligned at the right).
bool broadcasts_to(const Slot& in, const Slot& out) {
  if (in.rank > out.rank) return false;
  for (int32_t i = 0; i < in.rank; ++i) {
    const int32_t a = in.sizes[in.rank - 1 - i];
    const int32_t o = out.sizes[out.rank - 1 - i];
    if (a != o && a != 1) return false;
  }
  return true;
}

// Offset into `in` of output element `index` (row-major, broadcasting).
int64_t broadcast_offset(const Slot& in, const Slot& out, int64_t index) {
  int64_t offset = 0;
  int64_t stride = 1;
  for (int32_t d = out.rank - 1, k = in.rank - 1; d >= 0; --d, --k) {
    const int64_t coord = index % out.sizes[d];
    index /= out.sizes[d];
    if (k >= 0) {
      if (in.sizes[k] != 1) offset += coord * stride;
      stride *= in.sizes[k];
    }
  }
  return offset;
}

bool same_shape(const Slot& a, const Slot& b) {
  if (a.rank != b.rank) return false;
  for (int32_t i = 0; i < a.rank; ++i) {
    if (a.sizes[i] != b.sizes[i]) return false;
  }
  return true;
}

class DemoBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& ctx, FreeableBuffer* processed,
                               std::span<const CompileSpec>) const override {
    Reader r(processed->data(), processed->size());
    char magic[4];
    uint32_t version = 0;
    uint32_t counts[4];
    if (!r.read(magic, 4) || std::memcmp(magic, kMagic, 4) != 0) {
      ctx.fail("blob does not start with 'EDM1' (%zu bytes)", processed->size());
      return Error::DelegateInvalidCompatibility;
    }
    if (!r.u32(&version) || version != kVersion) {
      ctx.fail("blob version %u is not supported (expected %u)", version, kVersion);
      return Error::DelegateInvalidCompatibility;
    }
    for (uint32_t& c : counts) {
      if (!r.u32(&c) || c > kMaxCount) {
        ctx.fail("blob header is truncated or has an absurd count");
        return Error::DelegateInvalidCompatibility;
      }
    }
    MemoryAllocator* alloc = ctx.allocator;
    auto* compiled = alloc->allocate_array<Compiled>(1);
    if (compiled == nullptr) return Error::MemoryAllocationFailed;
    *compiled = Compiled{};
    compiled->num_slots = counts[0];
    compiled->num_inputs = counts[1];
    compiled->num_outputs = counts[2];
    compiled->num_instructions = counts[3];
    compiled->slots = alloc->allocate_array<Slot>(counts[0] > 0 ? counts[0] : 1);
    compiled->inputs = alloc->allocate_array<uint32_t>(counts[1] > 0 ? counts[1] : 1);
    compiled->outputs = alloc->allocate_array<uint32_t>(counts[2] > 0 ? counts[2] : 1);
    compiled->program = alloc->allocate_array<Instruction>(counts[3] > 0 ? counts[3] : 1);
    if (!compiled->slots || !compiled->inputs || !compiled->outputs || !compiled->program) {
      return Error::MemoryAllocationFailed;
    }
    for (uint32_t i = 0; i < compiled->num_slots; ++i) {
      Slot& s = *new (&compiled->slots[i]) Slot();
      uint8_t dtype = 0, rank = 0, pad[2];
      if (!r.u8(&dtype) || !r.u8(&rank) || !r.read(pad, 2)) {
        ctx.fail("blob is truncated in slot %u", i);
        return Error::DelegateInvalidCompatibility;
      }
      if (dtype != static_cast<uint8_t>(ScalarType::Float)) {
        ctx.fail("slot %u has dtype %s; the demo backend runs float32 only", i,
                 scalar_type_name(static_cast<ScalarType>(dtype)));
        return Error::DelegateInvalidCompatibility;
      }
      if (rank > kTensorMaxDim) {
        ctx.fail("slot %u has rank %u (max %d)", i, rank, kTensorMaxDim);
        return Error::DelegateInvalidCompatibility;
      }
      s.rank = rank;
      for (uint32_t d = 0; d < rank; ++d) {
        uint32_t v = 0;
        if (!r.u32(&v) || static_cast<int32_t>(v) < 0) {
          ctx.fail("slot %u: size %u is truncated or negative", i, d);
          return Error::DelegateInvalidCompatibility;
        }
        s.sizes[d] = static_cast<int32_t>(v);
        if (s.sizes[d] != 0 && s.numel > (int64_t{1} << 40) / s.sizes[d]) {
          ctx.fail("slot %u is too large", i);
          return Error::DelegateInvalidCompatibility;
        }
        s.numel *= s.sizes[d];
      }
    }
    // Which slots are bound from outside, and which have been written so far.
    bool* written = alloc->allocate_array<bool>(compiled->num_slots > 0 ? compiled->num_slots : 1);
    bool* external = alloc->allocate_array<bool>(compiled->num_slots > 0 ? compiled->num_slots : 1);
    if (written == nullptr || external == nullptr) return Error::MemoryAllocationFailed;
    for (uint32_t i = 0; i < compiled->num_slots; ++i) written[i] = external[i] = false;
    for (uint32_t i = 0; i < compiled->num_inputs + compiled->num_outputs; ++i) {
      const bool is_input = i < compiled->num_inputs;
      uint32_t slot = 0;
      if (!r.u32(&slot) || slot >= compiled->num_slots) {
        ctx.fail("%s %u names slot %u, out of range (%u slots)", is_input ? "input" : "output",
                 is_input ? i : i - compiled->num_inputs, slot, compiled->num_slots);
        return Error::DelegateInvalidCompatibility;
      }
      if (is_input) {
        compiled->inputs[i] = slot;
        written[slot] = true;
      } else {
        compiled->outputs[i - compiled->num_inputs] = slot;
      }
      external[slot] = true;
    }
    for (uint32_t k = 0; k < compiled->num_instructions; ++k) {
      Instruction& ins = compiled->program[k];
      uint8_t pad[3];
      uint32_t alpha_bits = 0;
      if (!r.u8(&ins.opcode) || !r.read(pad, 3) || !r.u32(&ins.a) || !r.u32(&ins.b) ||
          !r.u32(&ins.out) || !r.u32(&alpha_bits)) {
        ctx.fail("blob is truncated in instruction %u", k);
        return Error::DelegateInvalidCompatibility;
      }
      std::memcpy(&ins.alpha, &alpha_bits, 4);
      const bool unary = ins.opcode == kSin;
      if (ins.opcode < kSin || ins.opcode > kMm) {
        ctx.fail("instruction %u has unknown opcode %u", k, ins.opcode);
        return Error::DelegateInvalidCompatibility;
      }
      const uint32_t n = compiled->num_slots;
      if (ins.a >= n || ins.out >= n || (!unary && ins.b >= n)) {
        ctx.fail("instruction %u names a slot out of range (%u slots)", k, n);
        return Error::DelegateInvalidCompatibility;
      }
      if (!written[ins.a] || (!unary && !written[ins.b])) {
        ctx.fail("instruction %u reads a slot nothing has written", k);
        return Error::DelegateInvalidCompatibility;
      }
      const Slot& a = compiled->slots[ins.a];
      const Slot& out = compiled->slots[ins.out];
      bool shapes_ok = true;
      if (unary) {
        shapes_ok = same_shape(a, out);
      } else if (ins.opcode == kMm) {
        const Slot& b = compiled->slots[ins.b];
        shapes_ok = a.rank == 2 && b.rank == 2 && out.rank == 2 && a.sizes[1] == b.sizes[0] &&
                    out.sizes[0] == a.sizes[0] && out.sizes[1] == b.sizes[1] && ins.out != ins.a &&
                    ins.out != ins.b;
      } else {
        shapes_ok = broadcasts_to(a, out) && broadcasts_to(compiled->slots[ins.b], out);
      }
      if (!shapes_ok) {
        ctx.fail("instruction %u (opcode %u): slot shapes do not fit the op", k, ins.opcode);
        return Error::DelegateInvalidCompatibility;
      }
      written[ins.out] = true;
    }
    if (r.remaining() != 0) {
      ctx.fail("blob has %zu trailing bytes", r.remaining());
      return Error::DelegateInvalidCompatibility;
    }
    for (uint32_t i = 0; i < compiled->num_outputs; ++i) {
      if (!written[compiled->outputs[i]]) {
        ctx.fail("output %u is never written", i);
        return Error::DelegateInvalidCompatibility;
      }
    }
    for (uint32_t i = 0; i < compiled->num_slots; ++i) {
      Slot& s = compiled->slots[i];
      if (external[i] || s.numel == 0) continue;
      s.scratch = static_cast<float*>(alloc->allocate(static_cast<size_t>(s.numel) * sizeof(float), 64));
      if (s.scratch == nullptr) return Error::MemoryAllocationFailed;
    }
    // Profiled, execute logs one event per instruction it runs.
    ctx.events_per_execute = compiled->num_instructions;
    return static_cast<DelegateHandle*>(compiled);
  }

  Error execute(BackendExecutionContext& ctx, DelegateHandle* handle,
                std::span<EValue* const> args) const override {
    auto* c = static_cast<Compiled*>(handle);
    if (args.size() != size_t{c->num_inputs} + c->num_outputs) {
      ctx.fail("expected %u inputs and %u outputs, got %zu arguments", c->num_inputs,
               c->num_outputs, args.size());
      return Error::InvalidArgument;
    }
    for (uint32_t i = 0; i < c->num_slots; ++i) c->slots[i].data = c->slots[i].scratch;
    for (size_t i = 0; i < args.size(); ++i) {
      const bool is_input = i < c->num_inputs;
      Slot& s = c->slots[is_input ? c->inputs[i] : c->outputs[i - c->num_inputs]];
      if (!args[i]->is_tensor()) {
        ctx.fail("argument %zu is a %s, not a tensor", i, tag_name(args[i]->tag));
        return Error::InvalidArgument;
      }
      const Tensor& t = args[i]->to_tensor();
      bool ok = t.dtype == ScalarType::Float && t.dim == s.rank && t.is_contiguous_dim_order();
      for (int32_t d = 0; ok && d < s.rank; ++d) ok = t.sizes[d] == s.sizes[d];
      if (!ok) {
        ctx.fail("argument %zu must be a contiguous float32 tensor of the compiled shape", i);
        return Error::InvalidArgument;
      }
      s.data = t.data_ptr<float>();
    }
    if (!ctx.profiling()) {
      for (uint32_t k = 0; k < c->num_instructions; ++k) run(*c, c->program[k]);
      return Error::Ok;
    }
    for (uint32_t k = 0; k < c->num_instructions; ++k) {
      const uint64_t start = ctx.now_ns();
      run(*c, c->program[k]);
      ctx.log_event(kOpNames[c->program[k].opcode], start, ctx.now_ns());
    }
    return Error::Ok;
  }

 private:
  static void run(Compiled& c, const Instruction& ins) {
    const Slot& a = c.slots[ins.a];
    const Slot& out = c.slots[ins.out];
    float* o = out.data;
    if (ins.opcode == kSin) {
      for (int64_t i = 0; i < out.numel; ++i) o[i] = std::sin(a.data[i]);
      return;
    }
    const Slot& b = c.slots[ins.b];
    if (ins.opcode == kMm) {
      const int32_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
      for (int32_t i = 0; i < m; ++i) {
        for (int32_t j = 0; j < n; ++j) o[i * n + j] = 0.0f;
        for (int32_t p = 0; p < k; ++p) {
          const float av = a.data[i * k + p];
          for (int32_t j = 0; j < n; ++j) o[i * n + j] += av * b.data[p * n + j];
        }
      }
      return;
    }
    const bool plain = same_shape(a, out) && same_shape(b, out);
    for (int64_t i = 0; i < out.numel; ++i) {
      const float x = a.data[plain ? i : broadcast_offset(a, out, i)];
      const float y = b.data[plain ? i : broadcast_offset(b, out, i)];
      switch (ins.opcode) {
        case kAdd: o[i] = x + ins.alpha * y; break;
        case kSub: o[i] = x - ins.alpha * y; break;
        default: o[i] = x * y; break;
      }
    }
  }
};

const DemoBackend g_backend;
const BackendRegistration g_registration("BackendWithCompilerDemo", &g_backend);

}  // namespace
}  // namespace ember::backends::demo
