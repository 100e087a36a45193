// The size report's runner (make size-report): a program runner on
// extension::Module, linked with no kernels, with one model's kernels
// (a selective build) or with all of them, to show what an app that runs
// .pte files carries. It loads the program, feeds zeros to every tensor
// input of `forward` and executes it once; exit 0 and "ok" when it ran, 3
// with the runtime's error (e.g. OperatorMissing naming the op) otherwise.
#include <cstdio>
#include <vector>

#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"

using namespace ember;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PROGRAM.pte\n", argv[0]);
    return 2;
  }
  auto module = extension::Module::load(argv[1]);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", last_error_message());
    return 1;
  }
  Result<Method*> method = module.get()->method("forward");
  if (!method.ok()) {
    std::fprintf(stderr, "%s (%s)\n", last_error_message(), error_name(method.error()));
    return 3;
  }
  const MethodMeta meta = method.get()->method_meta();
  std::vector<extension::OwnedTensor> inputs;
  inputs.reserve(meta.num_inputs());
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) continue;  // Scalar inputs keep their exported value.
    inputs.emplace_back(info->dtype, info->sizes, info->dim_order);
    if (method.get()->set_input(i, inputs.back().tensor()) != Error::Ok) {
      std::fprintf(stderr, "%s\n", last_error_message());
      return 3;
    }
  }
  const Error err = method.get()->execute();
  if (err != Error::Ok) {
    std::fprintf(stderr, "%s (%s)\n", last_error_message(), error_name(err));
    return 3;
  }
  std::printf("ok\n");
  return 0;
}
