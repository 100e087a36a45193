"""Ember's main job, end to end: export a small CNN, lower it, write model.pte.

    python examples/export_cnn.py --out model.pte

Prints each stage (ATen graph, edge ops, the memory plan), saves the program,
runs it once in the C++ runtime through the Python bindings and compares it
with PyTorch eager. `make demo` then runs the file with `ember-run`.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.export import export

from ember.exir import ExecutorchBackendConfig, to_edge
from ember.exir.passes import MemoryPlanningPass
from ember.runtime import Runtime


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1)
        self.fc = torch.nn.Linear(32 * 16 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


def step(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="model.pte")
    parser.add_argument("--xnnpack-out", default="model_xnnpack.pte",
                        help="also write the model lowered with the XNNPACK delegate here ('' to skip)")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = SmallCNN().eval()
    example = (torch.randn(1, 3, 32, 32),)

    step("1. torch.export")
    t0 = time.perf_counter()
    aten = export(model, example)
    ops = [n.target for n in aten.graph.nodes if n.op == "call_function"]
    print(f"{len(ops)} ATen ops: {', '.join(sorted({str(o) for o in ops}))}")

    step("2. to_edge (core ATen, edge dialect, verified)")
    edge = to_edge(aten)
    edge_ops = [n.target for n in edge.exported_program().graph.nodes if n.op == "call_function"]
    print(f"{len(edge_ops)} edge ops: {', '.join(sorted({str(o) for o in edge_ops}))}")

    step("3. to_executorch (out variants, memory planning)")
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass()))
    print(program.memory_plan("forward"))

    step("4. write the .pte (C++ program writer)")
    program.save(args.out)
    print(f"wrote {args.out}: {len(program.buffer)} bytes in {time.perf_counter() - t0:.2f} s")

    step("5. run it in the C++ runtime (Python bindings) and compare with eager")
    method = Runtime.get().load_program(args.out).load_method("forward")
    x = torch.randn(1, 3, 32, 32)
    ours = method.execute([x])[0]
    with torch.no_grad():
        ref = model(x)
    print(f"max |ember - eager| = {(ours - ref).abs().max().item():.2e}")
    print(f"output[0, :5] = {ours[0, :5].tolist()}")

    if args.xnnpack_out:
        from ember.backends.xnnpack import XnnpackPartitioner

        step("6. the same model with the XNNPACK delegate")
        partitioner = XnnpackPartitioner()
        lowered = to_edge(aten).to_backend(partitioner)
        delegated = lowered.to_executorch()
        delegated.save(args.xnnpack_out)
        calls = [n for n in lowered.exported_program().graph.nodes if n.op == "call_function"]
        n_delegates = sum("executorch_call_delegate" in str(n.target) for n in calls)
        print(f"{n_delegates} XNNPACK delegate(s); left on portable kernels: "
              f"{[op for _, op, _ in partitioner.report()] or 'nothing'}")
        method = Runtime.get().load_program(args.xnnpack_out).load_method("forward")
        ours = method.execute([x])[0]
        print(f"wrote {args.xnnpack_out}: {len(delegated.buffer)} bytes; "
              f"max |ember+xnnpack - eager| = {(ours - ref).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
