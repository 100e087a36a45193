#include "tools/profile_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "schema/program_generated.h"
#include "tools/tensor_print.h"

namespace ember::tools {
namespace {

// The shape an instruction writes: its last argument (the out, by the
// format's convention) when that is a tensor; "" otherwise.
std::string output_shape(const Method& method, uint32_t instruction) {
  const Step& step = method.step(instruction);
  if (step.kind != Step::Kind::Kernel || step.num_args == 0) return "";
  const EValue* out = step.args[step.num_args - 1];
  if (out == nullptr || !out->is_tensor()) return "";
  return shape_string(out->to_tensor().shape());
}

std::string json_escape(const char* s) {
  std::string out;
  for (; s != nullptr && *s != '\0'; ++s) {
    if (*s == '"' || *s == '\\') out += '\\';
    out += *s;
  }
  return out;
}

// "model.py:42 (node aten_mm_default)" from Chain.stacktrace, or "".
std::string source_of(const Method& method, uint32_t instruction) {
  const auto* chains = method.execution_plan()->chains();
  const auto* trace = chains != nullptr && chains->size() > 0 ? chains->Get(0)->stacktrace() : nullptr;
  if (trace == nullptr || instruction >= trace->size()) return "";
  const auto* items = trace->Get(instruction)->items();
  std::string where, node;
  for (uint32_t i = 0; items != nullptr && i < items->size(); ++i) {
    const auto* f = items->Get(i);
    if (f->filename() != nullptr && f->filename()->size() > 0) {
      std::string file = f->filename()->str();
      const size_t slash = file.rfind('/');
      where = (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" +
              std::to_string(f->lineno());
    } else if (f->name() != nullptr) {
      node = f->name()->str();
    }
  }
  if (!node.empty()) where += (where.empty() ? "" : " ") + std::string("(") + node + ")";
  return where;
}

}  // namespace

void print_profile(const Method& method, const EventTracer& tracer, int runs, double wall_ms) {
  struct Row {
    double ns = 0;
    size_t calls = 0;
    std::set<std::string> shapes;
    // Events the delegate logged inside these calls, by name (first seen first).
    std::vector<std::pair<std::string, std::pair<double, size_t>>> inner;
  };
  std::map<std::string, Row> rows;
  double traced_ns = 0;
  for (size_t i = 0; i < tracer.size(); ++i) {
    const ProfileEvent& e = tracer.events()[i];
    const char* op = method.step(e.instruction).op_name;
    Row& row = rows[op != nullptr ? op : "?"];
    const double ns = double(e.end_ns - e.start_ns);
    if (e.name != nullptr) {  // inside a delegate call, counted in the call's time
      auto it = std::find_if(row.inner.begin(), row.inner.end(),
                             [&](const auto& r) { return r.first == e.name; });
      if (it == row.inner.end()) it = row.inner.insert(row.inner.end(), {e.name, {0.0, 0}});
      it->second.first += ns;
      ++it->second.second;
      continue;
    }
    row.ns += ns;
    ++row.calls;
    if (row.shapes.size() < 3) row.shapes.insert(output_shape(method, e.instruction));
    traced_ns += ns;
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  const double per_run = runs > 0 ? 1.0 / runs : 1.0;
  std::printf("\nprofile over %d runs (%.3f ms per run; instructions account for %.1f%%)\n", runs,
              wall_ms * per_run, wall_ms > 0 ? 100.0 * traced_ns / 1e6 / wall_ms : 0.0);
  std::printf("%-40s %10s %7s %7s %10s  %s\n", "operator", "ms/run", "share", "calls", "us/call",
              "output shapes");
  for (const auto& [name, row] : sorted) {
    std::string shapes;
    for (const std::string& s : row.shapes) shapes += (shapes.empty() ? "" : " ") + s;
    std::printf("%-40s %10.4f %6.1f%% %7.1f %10.2f  %s\n", name.c_str(), row.ns * 1e-6 * per_run,
                traced_ns > 0 ? 100.0 * row.ns / traced_ns : 0.0, double(row.calls) * per_run,
                row.calls > 0 ? row.ns * 1e-3 / double(row.calls) : 0.0, shapes.c_str());
    // The delegate's own events, indented under its calls.
    for (const auto& [inner, time] : row.inner) {
      const std::string label = "  - " + inner;
      std::printf("%-40s %10.4f %6.1f%% %7.1f %10.2f\n", label.c_str(),
                  time.first * 1e-6 * per_run,
                  traced_ns > 0 ? 100.0 * time.first / traced_ns : 0.0,
                  double(time.second) * per_run, time.first * 1e-3 / double(time.second));
    }
  }
  // The slowest instructions, with the model source line they come from.
  std::map<uint32_t, double> by_instruction;
  for (size_t i = 0; i < tracer.size(); ++i) {
    const ProfileEvent& e = tracer.events()[i];
    if (e.name == nullptr) by_instruction[e.instruction] += double(e.end_ns - e.start_ns);
  }
  std::vector<std::pair<uint32_t, double>> slowest(by_instruction.begin(), by_instruction.end());
  std::sort(slowest.begin(), slowest.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (slowest.size() > 8) slowest.resize(8);
  std::printf("\nslowest instructions\n%6s %-32s %10s %6s  %s\n", "#", "operator", "ms/run",
              "share", "source (node)");
  for (const auto& [k, ns] : slowest) {
    const char* name = method.step(k).op_name;
    std::printf("%6u %-32s %10.4f %5.1f%%  %s\n", k, name != nullptr ? name : "?",
                ns * 1e-6 * per_run, traced_ns > 0 ? 100.0 * ns / traced_ns : 0.0,
                source_of(method, k).c_str());
  }
  if (tracer.dropped() > 0) {
    std::printf("(%zu events did not fit in the trace buffer)\n", tracer.dropped());
  }
}

bool write_chrome_trace(const std::string& path, const Method& method, const EventTracer& tracer,
                        std::string* error, uint64_t program_size, uint64_t program_hash) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    *error = "cannot write " + path;
    return false;
  }
  const uint64_t origin = tracer.size() > 0 ? tracer.events()[0].start_ns : 0;
  std::fprintf(f, "{\"traceEvents\":[\n");
  for (size_t i = 0; i < tracer.size(); ++i) {
    const ProfileEvent& e = tracer.events()[i];
    const Step& step = method.step(e.instruction);
    const double ts = double(e.start_ns - origin) * 1e-3;
    const double dur = double(e.end_ns - e.start_ns) * 1e-3;
    if (e.name != nullptr) {  // a delegate's own event: nested in its call by time
      std::fprintf(f,
                   ",{\"name\":\"%s\",\"cat\":\"delegate_event\",\"ph\":\"X\",\"pid\":1,"
                   "\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"instruction\":%u,"
                   "\"delegate\":\"%s\"}}\n",
                   json_escape(e.name).c_str(), ts, dur, e.instruction,
                   json_escape(step.op_name).c_str());
      continue;
    }
    std::fprintf(f,
                 "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":1,"
                 "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"instruction\":%u,\"shape\":\"%s\"}}\n",
                 i == 0 ? "" : ",", json_escape(step.op_name).c_str(),
                 step.kind == Step::Kind::Delegate ? "delegate" : "kernel", ts, dur,
                 e.instruction, output_shape(method, e.instruction).c_str());
  }
  std::fprintf(f, "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"method\":\"%s\"",
               json_escape(method.name()).c_str());
  if (program_size > 0) {  // the program it was taken of (readers refuse another's)
    std::fprintf(f, ",\"program_size\":%llu,\"program_hash\":%llu",
                 static_cast<unsigned long long>(program_size),
                 static_cast<unsigned long long>(program_hash));
  }
  std::fprintf(f, "}}\n");
  const bool ok = std::fclose(f) == 0;
  if (!ok) *error = "cannot finish writing " + path;
  return ok;
}

}  // namespace ember::tools
