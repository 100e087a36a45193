// ember-run: load a .pte, feed inputs (from .npy files or random), run it,
// print each output and the latency.
//
//   ember-run model.pte [--method NAME] [--input FILE.npy ...] [--iters N]
//                       [--warmup N] [--save-outputs DIR] [--seed N] [--data FILE.ptd]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernel/thread_pool.h"
#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"
#include "tools/npy.h"
#include "tools/tensor_print.h"

using namespace ember;
using ember::extension::Module;

namespace {

struct Options {
  std::string path;
  std::string data_path;  // --data: the .ptd file of tensors kept outside the program
  std::string method = "forward";
  std::vector<std::string> inputs;
  int iters = 10;
  int warmup = 2;
  std::string save_dir;
  unsigned seed = 0;
  int load_iters = 1;
  int threads = -1;  // Pool threads; -1 = EMBER_NUM_THREADS or one per core
  Program::Verification verification = Program::Verification::Full;
};

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s model.pte [--method NAME] [--input FILE.npy ...] [--iters N]\n"
               "          [--warmup N] [--save-outputs DIR] [--seed N] [--load-iters N]\n"
               "          [--verification full|minimal] [--threads N] [--data FILE.ptd]\n"
               "  --data FILE   the .ptd file holding the weights the program keeps outside\n"
               "                itself (ExecutorchBackendConfig(external_constants=True))\n"
               "  --threads N   threads of the pool portable kernels and XNNPACK delegates\n"
               "                share (default: EMBER_NUM_THREADS, else one per core)\n",
               argv0);
  return 2;
}

// This process's peak resident set (VmHWM, reset at exec), or -1 off Linux.
long peak_rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

int fail(const char* what, Error err) {
  std::fprintf(stderr, "ember-run: %s: %s (%s)\n", what, last_error_message(), error_name(err));
  return 1;
}

void fill_random(std::vector<uint8_t>& bytes, ScalarType dtype, std::mt19937& rng) {
  const size_t n = bytes.size() / element_size(dtype);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::uniform_int_distribution<int> ints(0, 9);
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case ScalarType::Float: reinterpret_cast<float*>(bytes.data())[i] = uni(rng); break;
      case ScalarType::Double: reinterpret_cast<double*>(bytes.data())[i] = uni(rng); break;
      case ScalarType::Long: reinterpret_cast<int64_t*>(bytes.data())[i] = ints(rng); break;
      case ScalarType::Int: reinterpret_cast<int32_t*>(bytes.data())[i] = ints(rng); break;
      case ScalarType::Bool: bytes[i] = static_cast<uint8_t>(ints(rng) & 1); break;
      default: bytes[i * element_size(dtype)] = static_cast<uint8_t>(ints(rng)); break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--method" && (v = next())) opt.method = v;
    else if (a == "--data" && (v = next())) opt.data_path = v;
    else if (a == "--input" && (v = next())) opt.inputs.push_back(v);
    else if (a == "--iters" && (v = next())) opt.iters = std::max(1, std::atoi(v));
    else if (a == "--warmup" && (v = next())) opt.warmup = std::max(0, std::atoi(v));
    else if (a == "--save-outputs" && (v = next())) opt.save_dir = v;
    else if (a == "--seed" && (v = next())) opt.seed = static_cast<unsigned>(std::atoi(v));
    else if (a == "--load-iters" && (v = next())) opt.load_iters = std::max(1, std::atoi(v));
    else if (a == "--threads" && (v = next())) opt.threads = std::max(0, std::atoi(v));
    else if (a == "--verification" && (v = next()) && (std::string(v) == "full" || std::string(v) == "minimal")) {
      opt.verification = std::string(v) == "full" ? Program::Verification::Full
                                                   : Program::Verification::Minimal;
    }
    else if (a == "-h" || a == "--help") return usage(argv[0]);
    else if (!a.empty() && a[0] != '-' && opt.path.empty()) opt.path = a;
    else {
      std::fprintf(stderr, "ember-run: unknown or incomplete argument '%s'\n", a.c_str());
      return usage(argv[0]);
    }
  }
  if (opt.path.empty()) return usage(argv[0]);
  if (opt.threads >= 0) {
    (void)ember::set_thread_count(static_cast<size_t>(opt.threads));
  }

  // Load (mmap + Program::load + load_method), --load-iters times; the last
  // module is the one that runs. The median load time is reported.
  std::vector<double> load_ms;
  std::unique_ptr<Module> module;
  Method* method_ptr = nullptr;
  for (int i = 0; i < opt.load_iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Result<std::unique_ptr<Module>> loaded =
        Module::load(opt.path, Module::LoadMode::Mmap, opt.verification, opt.data_path);
    if (!loaded.ok()) return fail(("loading " + opt.path).c_str(), loaded.error());
    Result<Method*> m = loaded.get()->method(opt.method);
    if (!m.ok()) return fail(("loading method '" + opt.method + "'").c_str(), m.error());
    load_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    module = std::move(loaded.get());
    method_ptr = m.get();
  }
  std::sort(load_ms.begin(), load_ms.end());
  Method& method = *method_ptr;
  const MethodMeta meta = method.method_meta();

  if (!opt.inputs.empty() && opt.inputs.size() != meta.num_inputs()) {
    std::fprintf(stderr, "ember-run: method '%s' takes %zu inputs, %zu --input files given\n",
                 opt.method.c_str(), meta.num_inputs(), opt.inputs.size());
    return 1;
  }
  std::mt19937 rng(opt.seed);
  std::vector<extension::OwnedTensor> inputs(meta.num_inputs());
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) return fail("reading input metadata (only tensor inputs are supported)", info.error());
    extension::OwnedTensor& in = inputs[i];
    if (!opt.inputs.empty()) {
      tools::NpyArray arr;
      std::string err;
      if (!tools::read_npy(opt.inputs[i], &arr, &err)) {
        std::fprintf(stderr, "ember-run: %s\n", err.c_str());
        return 1;
      }
      in = extension::OwnedTensor(arr.dtype, arr.shape);
      in.set_bytes(std::move(arr.data));
    } else {
      in = extension::OwnedTensor(info->dtype, info->sizes, info->dim_order);
      fill_random(in.bytes(), info->dtype, rng);
    }
    const Error err = method.set_input(i, in.tensor());
    if (err != Error::Ok) return fail("setting input", err);
  }

  for (int i = 0; i < opt.warmup; ++i) {
    const Error err = method.execute();
    if (err != Error::Ok) return fail("execute", err);
  }
  std::vector<double> times_ms;
  for (int i = 0; i < opt.iters; ++i) {
    const auto s = std::chrono::steady_clock::now();
    const Error err = method.execute();
    const auto e = std::chrono::steady_clock::now();
    if (err != Error::Ok) return fail("execute", err);
    times_ms.push_back(std::chrono::duration<double, std::milli>(e - s).count());
  }

  std::printf("Program  %s  method '%s'  (%zu instructions)\n", opt.path.c_str(),
              opt.method.c_str(), method.num_steps());
  for (size_t i = 0; i < method.outputs_size(); ++i) {
    const EValue* out = method.get_output(i).get();
    if (!out->is_tensor()) {
      std::printf("output %zu: %s %s\n", i, tag_name(out->tag),
                  tools::scalar_value_string(*out).c_str());
      continue;
    }
    const Tensor& t = out->to_tensor();
    std::printf("output %zu: %s %s  [%s]\n", i, scalar_type_name(t.dtype),
                tools::shape_string(t.shape()).c_str(), tools::first_values(t, 8).c_str());
    if (!opt.save_dir.empty()) {
      std::string err;
      const std::string path = opt.save_dir + "/output_" + std::to_string(i) + ".npy";
      if (!tools::write_npy(path, t.dtype, std::vector<int32_t>(t.shape().begin(), t.shape().end()),
                            t.data, t.nbytes(), &err)) {
        std::fprintf(stderr, "ember-run: %s\n", err.c_str());
        return 1;
      }
    }
  }
  std::vector<double> sorted = times_ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::printf("load %.3f ms (median of %d, %s verification) | latency over %d runs: median %.4f ms, "
              "min %.4f ms, max %.4f ms\n",
              load_ms[load_ms.size() / 2], opt.load_iters,
              opt.verification == Program::Verification::Full ? "full" : "minimal", opt.iters, median,
              sorted.front(), sorted.back());
  std::printf("planned memory %s\n", tools::human_bytes(double(module->planned_bytes(opt.method))).c_str());
  if (Result<Method*> m = module->method(opt.method); m.ok()) {
    std::printf("prepared at load %s (kernels' packed weights and state); %s of constants "
                "only prepare reads, handed back to the loader\n",
                tools::human_bytes(double(m.get()->prepared_bytes())).c_str(),
                tools::human_bytes(double(m.get()->dropped_constant_bytes())).c_str());
  }
  std::printf("threads %zu\n", ember::thread_count());
  if (const long kib = peak_rss_kib(); kib > 0) {
    std::printf("peak RSS %s\n", tools::human_bytes(double(kib) * 1024.0).c_str());
  }
  return 0;
}
