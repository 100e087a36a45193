// Debian's XNNPACK int8 convolutions (qc8: int8 activations, per-channel int8
// weights, as Ember's quantizer makes them), timed layer by layer: what a
// partitioner would gain by lowering a quantized convolution to XNNPACK
// instead of Ember's own int8 kernels. bench/models/xnnpack_qs8_compare.py
// writes the layers of a quantized program to a file, runs this, and sets
// the times beside Ember's profile of the same program.
//
//   xnnpack_qs8_bench --layers FILE [--threads N] [--reps N] [--json]
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Layer {
  int h, w, cin, cout, k, stride, top, left, bottom, right, groups;
};

// One layer per line: "H W CIN COUT K STRIDE TOP LEFT BOTTOM RIGHT GROUPS" (an
// input of batch 1, a square kernel, the same stride on both axes, padding
// per side: TF-style models pad asymmetrically before stride-2 layers).
bool read_layers(const char* path, std::vector<Layer>& layers) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  Layer l{};
  while (std::fscanf(f, "%d %d %d %d %d %d %d %d %d %d %d", &l.h, &l.w, &l.cin, &l.cout, &l.k, &l.stride,
                     &l.top, &l.left, &l.bottom, &l.right, &l.groups) == 11) {
    if (l.h <= 0 || l.w <= 0 || l.groups <= 0 || l.cin % l.groups || l.cout % l.groups || l.k <= 0 ||
        l.stride <= 0 || l.top < 0 || l.left < 0 || l.bottom < 0 || l.right < 0 ||
        l.h + l.top + l.bottom < l.k || l.w + l.left + l.right < l.k) {
      std::fclose(f);
      return false;
    }
    layers.push_back(l);
  }
  const bool all = std::feof(f) != 0;
  std::fclose(f);
  return all;
}

int out_size(int in, int k, int stride, int pad) { return (in + pad - k) / stride + 1; }

// Median microseconds of `reps` runs of one qc8 convolution, or -1 on failure.
double time_layer(const Layer& l, pthreadpool_t pool, int reps) {
  const int oh = out_size(l.h, l.k, l.stride, l.top + l.bottom);
  const int ow = out_size(l.w, l.k, l.stride, l.left + l.right);
  const size_t gin = static_cast<size_t>(l.cin / l.groups), gout = static_cast<size_t>(l.cout / l.groups);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(-100, 100);
  std::vector<int8_t> input(static_cast<size_t>(l.h) * l.w * l.cin), output(static_cast<size_t>(oh) * ow * l.cout);
  std::vector<int8_t> kernel(static_cast<size_t>(l.cout) * l.k * l.k * gin);
  for (auto& v : input) v = static_cast<int8_t>(byte(rng));
  for (auto& v : kernel) v = static_cast<int8_t>(byte(rng));
  std::vector<int32_t> bias(static_cast<size_t>(l.cout), 100);
  std::vector<float> kernel_scale(static_cast<size_t>(l.cout), 0.01f);
  xnn_operator_t op = nullptr;
  if (xnn_create_convolution2d_nhwc_qc8(
          static_cast<uint32_t>(l.top), static_cast<uint32_t>(l.right), static_cast<uint32_t>(l.bottom),
          static_cast<uint32_t>(l.left), static_cast<uint32_t>(l.k), static_cast<uint32_t>(l.k),
          static_cast<uint32_t>(l.stride), static_cast<uint32_t>(l.stride), 1, 1,
          static_cast<uint32_t>(l.groups), gin, gout, static_cast<size_t>(l.cin),
          static_cast<size_t>(l.cout), -3, 0.05f, kernel_scale.data(), kernel.data(), bias.data(), 5,
          0.1f, -128, 127, 0, &op) != xnn_status_success) {
    return -1;
  }
  if (xnn_setup_convolution2d_nhwc_qc8(op, 1, static_cast<size_t>(l.h), static_cast<size_t>(l.w),
                                       input.data(), output.data(), pool) != xnn_status_success) {
    xnn_delete_operator(op);
    return -1;
  }
  std::vector<double> us;
  for (int r = 0; r < reps + 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    xnn_run_operator(op, pool);
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 3) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  xnn_delete_operator(op);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const char* layers_path = nullptr;
  int threads = 1, reps = 50;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--layers") && i + 1 < argc) layers_path = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--json")) json = true;
    else layers_path = nullptr, i = argc;
  }
  std::vector<Layer> layers;
  if (layers_path == nullptr || threads < 1 || reps < 1) {
    std::fprintf(stderr, "usage: %s --layers FILE [--threads N] [--reps N] [--json]\n"
                 "  FILE: one layer per line, \"H W CIN COUT K STRIDE TOP LEFT BOTTOM RIGHT GROUPS\"\n",
                 argv[0]);
    return 2;
  }
  if (!read_layers(layers_path, layers)) {
    std::fprintf(stderr, "%s: cannot read the layers (11 integers per line; groups dividing both "
                 "channel counts; a kernel no larger than the padded input)\n", layers_path);
    return 2;
  }
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed: XNNPACK does not support this CPU\n");
    return 1;
  }
  pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
  if (json) std::printf("[\n");
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    const double us = time_layer(l, pool, reps);
    const int oh = out_size(l.h, l.k, l.stride, l.top + l.bottom);
    const int ow = out_size(l.w, l.k, l.stride, l.left + l.right);
    const double macs = double(oh) * ow * l.cout * (l.cin / l.groups) * l.k * l.k;
    if (json) {
      std::printf("%s  {\"h\": %d, \"w\": %d, \"cin\": %d, \"cout\": %d, \"k\": %d, \"stride\": %d, "
                  "\"padding\": [%d, %d, %d, %d], \"groups\": %d, \"us\": %.2f}",
                  i ? ",\n" : "", l.h, l.w, l.cin, l.cout, l.k, l.stride, l.top, l.left, l.bottom, l.right,
                  l.groups, us);
    } else {
      std::printf("%4d×%-4d %4d→%-4d k%d s%d p%d,%d,%d,%d g%-4d %9.1f µs %7.1f Gop/s\n", l.h, l.w, l.cin,
                  l.cout, l.k, l.stride, l.top, l.left, l.bottom, l.right, l.groups, us,
                  us > 0 ? 2 * macs / us / 1e3 : 0.0);
    }
  }
  if (json) std::printf("\n]\n");
  if (pool) pthreadpool_destroy(pool);
  return 0;
}
