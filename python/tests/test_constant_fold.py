"""Constant folding in to_executorch: what is folded, what never is, and
that folded programs still match eager in the C++ runtime."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from ember.exir.emit.constants import tensor_bytes
from ember.exir.passes import ConstantFoldPass
from models import Encode
from torch.export import export
from torch.export.graph_signature import InputKind


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class SharedTranspose(torch.nn.Module):
    """``w.t()`` once with two readers, and once more as its own node."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        wt = self.w.t()
        return x @ wt, y @ wt, x + self.w.t()


class Chain(torch.nn.Module):
    """A non-persistent buffer and a parameter through several ops, and a
    split whose pieces are read through getitem."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 6))
        self.register_buffer("scale", torch.rand(6) + 0.5, persistent=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = torch.split(torch.relu(self.w * self.scale + 1.0), 3, dim=1)
        return x + a, x * b


class RandomWithParameter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.randn(4, 4) * self.w.t()


def _executorch(model: torch.nn.Module, args: tuple, **config: bool):
    return to_edge(export(model, args)).to_executorch(ExecutorchBackendConfig(**config))


def _targets(ep: torch.export.ExportedProgram) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _folded_specs(ep: torch.export.ExportedProgram) -> list:
    return [
        s
        for s in ep.graph_signature.input_specs
        if s.kind == InputKind.CONSTANT_TENSOR and s.target.startswith("folded_")
    ]


def _run(program, args: tuple) -> list[torch.Tensor]:
    pytest.importorskip("ember._C")
    from ember.runtime import Runtime

    return Runtime.get().load_program(program.buffer).load_method("forward").execute(list(args))


def test_linear_weight_permute_is_folded() -> None:
    model, args = Linear(), (torch.randn(2, 8),)
    program = _executorch(model, args)
    ep = program.exported_program()
    assert not any("permute_copy" in t for t in _targets(ep))
    assert any("addmm.out" in t for t in _targets(ep))
    (spec,) = _folded_specs(ep)
    torch.testing.assert_close(ep.constants[spec.target], model.fc.weight.detach().t())
    # The untransposed weight is no longer read, so it is gone from the program.
    assert "fc.weight" not in ep.state_dict
    assert all(s.target != "fc.weight" for s in ep.graph_signature.input_specs)
    assert tensor_bytes(model.fc.weight.detach()) not in program.emitted.constant_buffers
    assert tensor_bytes(model.fc.weight.detach().t()) in program.emitted.constant_buffers
    assert "permute_copy" not in program.emitted.json
    (out,) = _run(program, args)
    with torch.no_grad():
        torch.testing.assert_close(out, model(*args), rtol=1e-5, atol=1e-6)


def test_folding_can_be_switched_off() -> None:
    model, args = Linear(), (torch.randn(2, 8),)
    program = _executorch(model, args, constant_folding=False)
    ep = program.exported_program()
    assert any("permute_copy.out" in t for t in _targets(ep))
    assert not _folded_specs(ep)
    assert "fc.weight" in ep.state_dict
    (out,) = _run(program, args)
    with torch.no_grad():
        torch.testing.assert_close(out, model(*args), rtol=1e-5, atol=1e-6)


def test_shared_folded_constant_is_stored_once() -> None:
    model = SharedTranspose()
    args = (torch.randn(4, 4), torch.randn(4, 4))
    program = _executorch(model, args)
    ep = program.exported_program()
    assert not any("permute_copy" in t for t in _targets(ep))
    (spec,) = _folded_specs(ep)  # both transposes share one constant
    (node,) = [n for n in ep.graph.nodes if n.name == spec.arg.name]
    assert len(node.users) == 3
    wt = tensor_bytes(model.w.detach().t())
    assert program.emitted.constant_buffers.count(wt) == 1
    assert len(program.emitted.constant_buffers) == 1  # w itself is unused now
    plan = program.emitted.program["execution_plan"][0]
    stored = [
        v for v in plan["values"] if v["val_type"] == "Tensor" and v["val"]["data_buffer_idx"]
    ]
    assert len(stored) == 1
    with torch.no_grad():
        expected = model(*args)
    for got, want in zip(_run(program, args), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_chain_through_buffer_and_getitem_is_folded() -> None:
    model, args = Chain(), (torch.randn(4, 3),)
    program = _executorch(model, args)
    ep = program.exported_program()
    # Only the two uses of the folded pieces are left.
    assert sorted(t.split(".")[-2] for t in _targets(ep) if "alloc" not in t) == ["add", "mul"]
    assert len(_folded_specs(ep)) == 2
    assert "scale" not in ep.constants and "w" not in ep.state_dict
    with torch.no_grad():
        expected = model(*args)
    for got, want in zip(_run(program, args), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_random_ops_are_never_folded() -> None:
    program = _executorch(RandomWithParameter(), (torch.randn(4, 4),))
    targets = _targets(program.exported_program())
    assert "aten.randn.out" in targets
    # The parameter's transpose is folded; the product with randn is not.
    assert "aten.mul.out" in targets and "aten.permute_copy.out" not in targets
    assert len(_folded_specs(program.exported_program())) == 1

    encode = _executorch(Encode(), (torch.randn(1, 10),))
    targets = _targets(encode.exported_program())
    assert "aten.randn.out" in targets and "aten.permute_copy.out" in targets
    assert not _folded_specs(encode.exported_program())


def test_dropout_and_mutated_buffers_are_not_folded() -> None:
    class Stateful(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(4))
            self.register_buffer("count", torch.zeros(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.count.add_(1)
            dropped = torch.nn.functional.dropout(self.w, 0.5, training=True)
            return x + self.count * 2 + self.w * 3 + dropped

    edge = to_edge(export(Stateful(), (torch.randn(4),))).exported_program()
    folded = ConstantFoldPass()(edge)
    targets = _targets(folded)
    assert any("native_dropout" in t for t in targets)
    assert any(n.name == "b_count" for n in folded.graph.nodes)  # mutated: read at run time
    assert len(_folded_specs(folded)) == 1  # w * 3 only
    torch.testing.assert_close(folded.constants["folded_0"], torch.full((4,), 3.0))
    # The input program is left as it was.
    assert not _folded_specs(edge) and "w" in edge.state_dict


class TiedEmbedding(torch.nn.Module):
    """A language-model head tied to the embedding (GPT-2, Llama with tying)."""

    def __init__(self, vocab: int = 500, dim: int = 32) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.embed(tokens)))


def test_folded_transpose_of_a_tied_weight_is_not_stored_twice() -> None:
    """The head's transposed weight is the embedding's bytes in dim order [1, 0],
    not a second copy (GPT-2 124M: 618 MiB with the copy, 474 without)."""
    from ember.runtime import Runtime

    torch.manual_seed(0)
    model = TiedEmbedding().eval()
    tokens = torch.randint(0, 500, (2, 7))
    edge = to_edge(export(model, (tokens,)))
    weight_bytes = 500 * 32 * 4
    folded = edge.to_executorch()
    unfolded = edge.to_executorch(ExecutorchBackendConfig(constant_folding=False))
    assert len(folded.buffer) < len(unfolded.buffer) + weight_bytes // 4
    assert len(folded.buffer) < 1.25 * weight_bytes
    mm = [n for n in folded.exported_program().graph.nodes if "mm" in str(n.target)]
    assert mm and mm[0].args[1].op == "placeholder", "the transpose was folded"
    got = Runtime.get().load_program(folded.buffer).load_method().execute([tokens])[0]
    want = model(tokens)
    assert float((got - want).abs().max()) <= 1e-5 * float(want.abs().max())


def test_folded_transpose_read_by_other_ops_stays_a_contiguous_copy() -> None:
    class TransposeAdd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 6))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.w.t()

    from ember.runtime import Runtime

    model = TransposeAdd()
    x = torch.randn(6, 4)
    et = to_edge(export(model, (x,))).to_executorch()
    got = Runtime.get().load_program(et.buffer).load_method().execute([x])[0]
    torch.testing.assert_close(got, model(x))
