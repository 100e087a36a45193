// ember-run: load a .pte, feed inputs (from .npy files or random), run it,
// print each output and the latency.
//
//   ember-run model.pte [--method NAME] [--input FILE.npy ...] [--iters N]
//                       [--warmup N] [--save-outputs DIR] [--seed N] [--data FILE.ptd]
//                       [--profile [FILE.json]] [--profile-out FILE.eprof]
//                       (ember-run --help explains each)
//   ember-run model.bpte --verify [--rtol R] [--atol A]   (its bundled test cases)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernel/thread_pool.h"
#include "extension/bundled_program/bundled_program.h"
#include "extension/data_loader/file_data_loader.h"
#include "extension/devtools/profile_file.h"
#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"
#include "tools/npy.h"
#include "tools/profile_report.h"
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
  bool profile = false;
  std::string trace_path;  // --profile FILE.json: a Chrome trace (Perfetto opens it)
  std::string profile_out;  // --profile-out FILE.eprof: the profile file (schema/profile.fbs)
  Program::Verification verification = Program::Verification::Full;
  bool method_given = false;
  bool verify = false;  // --verify: run a .bpte's test cases instead of timing
  double rtol = 1e-5;
  double atol = 1e-8;
};

const char kHelp[] =
    "usage: ember-run model.pte|model.bpte [options]\n"
    "       ember-run model.bpte --verify [--rtol R] [--atol A] [--method NAME]\n"
    "Loads a program, sets each input (from .npy files, or random values of the\n"
    "input's dtype and shape), runs the method and prints its outputs, the\n"
    "latency and memory.\n"
    "\n"
    "  --method NAME        the method to run (default forward)\n"
    "  --input FILE.npy     one per input, in order (default: random)\n"
    "  --iters N            timed runs (default 10); inputs are set before each run\n"
    "  --warmup N           untimed runs first (default 2)\n"
    "  --seed N             seed of the random inputs (default 0)\n"
    "  --save-outputs DIR   write each output as DIR/output_<i>.npy\n"
    "  --load-iters N       load the program N times, report the median load time\n"
    "  --verification full|minimal   checks at load (default full: every rule of the format)\n"
    "  --threads N          threads of the pool portable kernels and XNNPACK delegates\n"
    "                       share (default: EMBER_NUM_THREADS, else one per core)\n"
    "  --data FILE.ptd      the weights the program keeps outside itself\n"
    "                       (ExecutorchBackendConfig(external_constants=True))\n"
    "  --profile [FILE.json]  time every instruction over the timed runs: a table per\n"
    "                       operator (time, share, calls, output shapes); with a file,\n"
    "                       also a Chrome trace (open it in Perfetto or chrome://tracing);\n"
    "                       delegates' own events are indented under their calls\n"
    "  --profile-out FILE.eprof  --profile, and write the profile file (every run's\n"
    "                       events, the program's size and hash; the Inspector and\n"
    "                       ember-inspect --plot --profile read it)\n"
    "  --verify             run the test cases bundled in a .bpte (every method's, or\n"
    "                       --method's) and compare the outputs with the expected ones:\n"
    "                       a table per case (pass/fail, max abs/rel error, worst\n"
    "                       element); exit 1 when any case fails\n"
    "  --rtol R, --atol A   --verify's tolerances: |actual - expected| <= A + R * |expected|\n"
    "                       (default 1e-05 and 1e-08)\n"
    "  -h, --help           this text\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "ember-run: %s\n%s", message.c_str(), kHelp);
  return 2;
}

// A whole number >= minimum, or nothing.
std::optional<int> parse_count(const char* text, int minimum) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < minimum || v > 1000000000L) return std::nullopt;
  return static_cast<int>(v);
}

// A finite number >= 0, or nothing.
std::optional<double> parse_tolerance(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*end != '\0' || !(v >= 0.0) || v == HUGE_VAL) return std::nullopt;
  return v;
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

// The size and hash of the program in `path` (a .pte, or inside a .bpte).
Result<extension::ProgramFingerprint> program_fingerprint_of(const std::string& path) {
  Result<extension::MmapDataLoader> file = extension::MmapDataLoader::from(path.c_str());
  if (!file.ok()) return file.error();
  Result<FreeableBuffer> bytes = file->load(0, file->size().get());
  if (!bytes.ok()) return bytes.error();
  return extension::program_fingerprint(bytes->data(), bytes->size());
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

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

// --verify: every bundled test case (of --method's suite, when given) run
// and compared; a table per case, exit 1 when any fails.
int verify(const Options& opt) {
  Result<extension::MmapDataLoader> file = extension::MmapDataLoader::from(opt.path.c_str());
  if (!file.ok()) return fail(("opening " + opt.path).c_str(), file.error());
  const size_t size = file->size().get();
  Result<FreeableBuffer> bytes = file->load(0, size);
  if (!bytes.ok()) return fail(("reading " + opt.path).c_str(), bytes.error());
  if (!extension::is_bundled_program(bytes->data(), bytes->size())) {
    std::fprintf(stderr, "ember-run: --verify needs a bundled program (.bpte); %s is a plain program\n",
                 opt.path.c_str());
    return 1;
  }
  Result<extension::BundledProgram> bundled =
      extension::BundledProgram::load(bytes->data(), bytes->size());
  if (!bundled.ok()) return fail(("loading " + opt.path).c_str(), bundled.error());
  Result<std::unique_ptr<Module>> module =
      Module::load(opt.path, Module::LoadMode::Mmap, opt.verification, opt.data_path);
  if (!module.ok()) return fail(("loading " + opt.path).c_str(), module.error());
  Result<std::vector<extension::CaseReport>> reports = extension::run_bundled_tests(
      bundled.get(), [&](const std::string& name) { return module.get()->method(name); },
      opt.method_given ? opt.method : std::string(), opt.rtol, opt.atol);
  if (!reports.ok()) return fail("verifying", reports.error());
  std::printf("Bundled test cases of %s (rtol %s, atol %s)\n", opt.path.c_str(),
              number(opt.rtol).c_str(), number(opt.atol).c_str());
  std::printf("| method | case | result | max abs error | max rel error | worst element (output: index, actual vs expected) |\n"
              "|---|---:|---|---:|---:|---|\n");
  size_t failed = 0;
  for (const extension::CaseReport& r : reports.get()) {
    double max_abs = 0.0, max_rel = 0.0;
    std::string worst;
    for (const extension::OutputCheck& o : r.outputs) {
      max_abs = std::max(max_abs, o.max_abs_error);
      max_rel = std::max(max_rel, o.max_rel_error);
      if (!o.passed && worst.empty()) {
        worst = std::to_string(o.index) + ": " + std::to_string(o.worst_element) + ", " +
                number(o.actual) + " vs " + number(o.expected);
      }
    }
    failed += r.passed ? 0 : 1;
    std::printf("| %s | %zu | %s | %s | %s | %s |\n", r.method.c_str(), r.test_case,
                !r.compared ? "ran (nothing to compare)" : r.passed ? "pass" : "FAIL",
                r.compared ? number(max_abs).c_str() : "", r.compared ? number(max_rel).c_str() : "",
                worst.c_str());
  }
  std::printf("%zu cases: %zu passed, %zu failed\n", reports->size(), reports->size() - failed,
              failed);
  for (const extension::CaseReport& r : reports.get()) {
    if (!r.passed) {
      std::fprintf(stderr, "ember-run: %s\n",
                   extension::describe_failure(r, opt.rtol, opt.atol).c_str());
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto count = [&](int minimum, int* out) -> bool {
      const char* v = next();
      const std::optional<int> n = parse_count(v, minimum);
      if (!n) return false;
      *out = *n;
      return true;
    };
    auto bad_count = [&](int minimum) {
      return usage_error(a + " takes a whole number >= " + std::to_string(minimum) + ", got '" +
                         (i < argc ? argv[i] : "") + "'");
    };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--method" && (v = next())) {
      opt.method = v;
      opt.method_given = true;
    } else if (a == "--verify") {
      opt.verify = true;
    } else if (a == "--rtol" || a == "--atol") {
      const std::optional<double> t = parse_tolerance(next());
      if (!t) {
        return usage_error(a + " takes a number >= 0, got '" + (i < argc ? argv[i] : "") + "'");
      }
      (a == "--rtol" ? opt.rtol : opt.atol) = *t;
    } else if (a == "--data" && (v = next())) {
      opt.data_path = v;
    } else if (a == "--input" && (v = next())) {
      opt.inputs.push_back(v);
    } else if (a == "--save-outputs" && (v = next())) {
      opt.save_dir = v;
    } else if (a == "--iters") {
      if (!count(1, &opt.iters)) return bad_count(1);
    } else if (a == "--warmup") {
      if (!count(0, &opt.warmup)) return bad_count(0);
    } else if (a == "--load-iters") {
      if (!count(1, &opt.load_iters)) return bad_count(1);
    } else if (a == "--threads") {
      if (!count(0, &opt.threads)) return bad_count(0);
    } else if (a == "--seed") {
      int seed = 0;
      if (!count(0, &seed)) return bad_count(0);
      opt.seed = static_cast<unsigned>(seed);
    } else if (a == "--verification") {
      v = next();
      if (v == nullptr || (std::string(v) != "full" && std::string(v) != "minimal")) {
        return usage_error("--verification takes full or minimal");
      }
      opt.verification = std::string(v) == "full" ? Program::Verification::Full
                                                   : Program::Verification::Minimal;
    } else if (a == "--profile") {
      opt.profile = true;
      // An optional trace file: the next argument, when it is not an option
      // or the program.
      if (i + 1 < argc && argv[i + 1][0] != '-' &&
          std::string(argv[i + 1]).size() > 5 &&
          std::string(argv[i + 1]).rfind(".json") == std::string(argv[i + 1]).size() - 5) {
        opt.trace_path = argv[++i];
      }
    } else if (a == "--profile-out" && (v = next())) {
      opt.profile = true;
      opt.profile_out = v;
    } else if (!a.empty() && a[0] != '-' && opt.path.empty()) {
      opt.path = a;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option or missing value: '" + a + "'");
    } else {
      return usage_error("one program at a time: '" + a + "' after '" + opt.path + "'");
    }
  }
  if (opt.path.empty()) return usage_error("no program given");
  if (opt.threads >= 0) {
    (void)ember::set_thread_count(static_cast<size_t>(opt.threads));
  }
  if (opt.verify) return verify(opt);

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
    if (!m.ok() && m.error() == Error::NotFound) {
      std::string names;
      for (const std::string& n : loaded.get()->method_names()) names += (names.empty() ? "" : ", ") + n;
      std::fprintf(stderr, "ember-run: the program has no method '%s'; its methods: %s\n",
                   opt.method.c_str(), names.c_str());
      return 1;
    }
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
  }
  // Inputs are set before every run: a plan may let later values reuse an
  // input's memory (other exporters write such plans).
  auto set_inputs = [&]() -> Error {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Error err = method.set_input(i, inputs[i].tensor());
      if (err != Error::Ok) return err;
    }
    return Error::Ok;
  };

  for (int i = 0; i < opt.warmup; ++i) {
    if (const Error err = set_inputs(); err != Error::Ok) return fail("setting inputs", err);
    const Error err = method.execute();
    if (err != Error::Ok) return fail("execute", err);
  }
  // Sized at load from what one run records (delegates' own events too).
  std::vector<ProfileEvent> events;
  std::optional<EventTracer> tracer;
  std::optional<extension::ProfileBuilder> profile;
  if (opt.profile) {
    events.resize(method.profile_events_per_run() * static_cast<size_t>(opt.iters) + 1);
    tracer.emplace(events.data(), events.size());
    method.set_event_tracer(&*tracer);
  }
  // The program the profile is of (its size and hash), for the file and the trace.
  extension::ProgramFingerprint fingerprint;
  if (opt.profile) {
    Result<extension::ProgramFingerprint> fp = program_fingerprint_of(opt.path);
    if (!fp.ok()) return fail(("reading " + opt.path).c_str(), fp.error());
    fingerprint = fp.get();
  }
  if (!opt.profile_out.empty()) {
    profile.emplace(method, fingerprint, static_cast<uint32_t>(ember::thread_count()));
  }
  std::vector<double> times_ms;
  for (int i = 0; i < opt.iters; ++i) {
    if (const Error err = set_inputs(); err != Error::Ok) return fail("setting inputs", err);
    const size_t before = tracer ? tracer->size() : 0;
    const auto s = std::chrono::steady_clock::now();
    const Error err = method.execute();
    const auto e = std::chrono::steady_clock::now();
    if (err != Error::Ok) return fail("execute", err);
    times_ms.push_back(std::chrono::duration<double, std::milli>(e - s).count());
    if (profile) profile->add_run(tracer->events() + before, tracer->size() - before);
  }
  method.set_event_tracer(nullptr);

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
  if (tracer) {
    const double total_ms = std::accumulate(times_ms.begin(), times_ms.end(), 0.0);
    tools::print_profile(method, *tracer, opt.iters, total_ms);
    if (!opt.trace_path.empty()) {
      std::string err;
      if (!tools::write_chrome_trace(opt.trace_path, method, *tracer, &err, fingerprint.size,
                                     fingerprint.hash)) {
        std::fprintf(stderr, "ember-run: %s\n", err.c_str());
        return 1;
      }
      std::printf("trace written to %s (open it in https://ui.perfetto.dev)\n",
                  opt.trace_path.c_str());
    }
    if (profile) {
      profile->add_dropped(tracer->dropped());
      std::string err;
      if (!extension::write_profile_file(opt.profile_out, profile->data(), &err)) {
        std::fprintf(stderr, "ember-run: %s\n", err.c_str());
        return 1;
      }
      std::printf("profile written to %s\n", opt.profile_out.c_str());
    }
  }
  if (const long kib = peak_rss_kib(); kib > 0) {
    std::printf("peak RSS %s\n", tools::human_bytes(double(kib) * 1024.0).c_str());
  }
  return 0;
}
