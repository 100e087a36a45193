"""Mutable buffers (#17): state a method keeps across execute() calls.

Each program here runs several steps in Ember and in eager side by side; the
buffers' state must follow eager's after every step. Also: KV-cache updates
write in place (bytes per step independent of the cache's size), two loaded
methods do not share state, reset() restores the initial values, and
transformers' static-cache export decodes token for token as eager generate.
"""

from __future__ import annotations

import pytest
import torch

from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.exir import ExecutorchBackendConfig, to_edge
from ember.runtime import Runtime


def _lower(model: torch.nn.Module, inputs: tuple, config: ExecutorchBackendConfig | None = None):
    ep = torch.export.export(model, inputs)
    return to_edge(ep).to_executorch(config)


def _method(et):
    return Runtime.get().load_program(et.buffer).load_method()


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    scale = max(float(want.abs().max()), 1.0) if want.numel() else 1.0
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5 * scale)


class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.tensor([2.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count.add_(1)
        return x * self.count


class KVCache(torch.nn.Module):
    """A cache written with index_copy_ (what transformers' StaticCache does)."""

    def __init__(self, length: int = 16, heads: int = 2, dim: int = 8) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(1, heads, length, dim))
        self.register_buffer("v", torch.zeros(1, heads, length, dim))

    def forward(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.k.index_copy_(2, pos, k)
        self.v.index_copy_(2, pos, v)
        scores = torch.softmax(k @ self.k.transpose(2, 3), dim=-1)
        return scores @ self.v


def _steps(model: torch.nn.Module, method, inputs_of, n: int) -> None:
    for step in range(n):
        inputs = inputs_of(step)
        want = model(*inputs)
        got = method.execute(list(inputs))
        wants = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(wants), "the method returns the user outputs only"
        for g, w in zip(got, wants, strict=True):
            _close(g, w)


def test_counter_keeps_state_across_runs() -> None:
    et = _lower(Counter(), (torch.randn(3),))
    method = _method(et)
    assert method.num_mutable_buffers == 1 and method.mutable_buffer_bytes == 4
    (w,) = et.memory_plan().write_backs
    assert w.buffer == "count" and w.how.startswith("copy from") and w.bytes_per_run == 4
    _steps(Counter(), method, lambda s: (torch.full((3,), float(s + 1)),), 5)


def test_kv_cache_updates_in_place_and_matches_eager() -> None:
    torch.manual_seed(0)
    et = _lower(KVCache(), (torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), torch.tensor([0])))
    plan = et.memory_plan()
    assert {w.buffer: w.how.split(" (")[0] for w in plan.write_backs} == {
        "k": "in place", "v": "in place"}
    assert "Mutable buffers of 'forward'" in str(plan) and "bytes written per run" in str(plan)
    method = _method(et)
    positions = [0, 1, 2, 7, 3, 15, 1]
    _steps(KVCache(), method,
           lambda s: (torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), torch.tensor([positions[s]])),
           len(positions))


def test_kv_cache_update_cost_does_not_grow_with_the_cache() -> None:
    per_run = []
    for length in (16, 256):
        et = _lower(KVCache(length), (torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8),
                                      torch.tensor([0])))
        per_run.append(sum(w.bytes_per_run for w in et.memory_plan().write_backs))
        assert et.memory_plan().mutable_bytes >= 2 * length * 2 * 8 * 4
    assert per_run[0] == per_run[1] == 2 * (2 * 8 * 4)  # one entry of k and of v


class SliceWrites(torch.nn.Module):
    """Slice and select assignment (slice_scatter / select_scatter)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.arange(24, dtype=torch.float32).reshape(4, 6))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.state[1:3, 2:5] = x
        self.state[0] = self.state[0] + y
        return self.state.sum(0)


def test_slice_and_select_assignment() -> None:
    et = _lower(SliceWrites(), (torch.randn(2, 3), torch.randn(6)))
    _steps(SliceWrites(), _method(et), lambda s: (torch.randn(2, 3), torch.randn(6)), 4)


def test_reading_the_old_value_after_the_update_copies_instead() -> None:
    """A pass may move a read of the old value past the update: then the update
    cannot write in place, and the results still follow eager."""

    class ReadsOld(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("k", torch.zeros(1, 4, 3))

        def forward(self, x: torch.Tensor, pos: torch.Tensor):
            old = self.k.sum(1)
            self.k.index_copy_(1, pos, x)
            return old, self.k.sum(1)

    def move_old_read_last(gm: torch.fx.GraphModule) -> None:
        nodes = [n for n in gm.graph.nodes if n.op == "call_function" and "sum" in n.name]
        first_sum = nodes[0]
        assert first_sum.args[0].op == "placeholder"
        gm.graph.output_node().prepend(first_sum)
        gm.recompile()

    et = _lower(ReadsOld(), (torch.randn(1, 1, 3), torch.tensor([0])),
                ExecutorchBackendConfig(passes=[move_old_read_last]))
    (w,) = et.memory_plan().write_backs
    assert w.how.startswith("copy from")
    _steps(ReadsOld(), _method(et), lambda s: (torch.randn(1, 1, 3), torch.tensor([s % 4])), 5)


def test_loaded_methods_do_not_share_state_and_reset() -> None:
    et = _lower(Counter(), (torch.randn(2),))
    program = Runtime.get().load_program(et.buffer)
    a, b = program.load_method(), program.load_method()
    x = torch.ones(2)
    for _ in range(3):
        a.execute([x])
    torch.testing.assert_close(b.execute([x])[0], torch.full((2,), 3.0))  # b's first run
    torch.testing.assert_close(a.execute([x])[0], torch.full((2,), 6.0))  # a's fourth
    a.reset()
    torch.testing.assert_close(a.execute([x])[0], torch.full((2,), 3.0))


def test_inputs_mutated_in_place_are_updated_in_the_callers_tensors() -> None:
    class MutatesInputs(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            x.add_(1)  # whole input: a copy at the end
            y[1:3] = z.sum()  # part of it: written in place
            return x * 2 + y

    model = MutatesInputs()
    example = (torch.randn(4), torch.randn(4), torch.randn(2))
    method = _method(_lower(model, tuple(t.clone() for t in example)))
    assert method._method.written_inputs == [0, 1]
    for _ in range(3):
        inputs = [torch.randn(4), torch.randn(4), torch.randn(2)]
        mine = [t.clone() for t in inputs]
        want = model(*inputs)
        _close(method.execute(mine)[0], want)
        for got, expected in zip(mine, inputs, strict=True):
            torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_training_batch_norm_updates_its_running_statistics() -> None:
    torch.manual_seed(3)
    model = torch.nn.BatchNorm1d(5).train()
    et = _lower(model, (torch.randn(8, 5),))
    assert {w.buffer for w in et.memory_plan().write_backs} >= {"running_mean", "running_var"}
    reference = torch.nn.BatchNorm1d(5).train()
    _steps(reference, _method(et), lambda s: (torch.randn(8, 5) * (s + 1) + s,), 4)


def test_mutated_buffer_read_by_a_delegate_is_not_baked_into_it() -> None:
    class DriftingLinear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("w", torch.randn(8, 16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.w.add_(0.5)
            return torch.nn.functional.linear(x, self.w)

    torch.manual_seed(1)
    model = DriftingLinear()
    ep = torch.export.export(model, (torch.randn(4, 16),))
    edge = to_edge(ep).to_backend(XnnpackPartitioner())
    et = edge.to_executorch()
    reference = DriftingLinear()
    reference.load_state_dict(model.state_dict())
    _steps(reference, _method(et), lambda s: (torch.randn(4, 16),), 4)


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
def test_transformers_static_cache_decodes_like_generate(family: str) -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.integrations.executorch import convert_and_export_with_cache

    configs = {
        "llama": lambda: transformers.LlamaConfig(
            vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2),
        "qwen2": lambda: transformers.Qwen2Config(
            vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2),
        "gpt2": lambda: transformers.GPT2Config(
            vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=64,
            bos_token_id=1, eos_token_id=2),
    }
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(configs[family]()).eval()
    model.generation_config = transformers.GenerationConfig(
        use_cache=True, cache_implementation="static", pad_token_id=0,
        cache_config={"batch_size": 1, "max_cache_len": 40})
    et = to_edge(convert_and_export_with_cache(model)).to_executorch()
    hows = {w.buffer: w.how for w in et.memory_plan().write_backs}
    assert all(how.startswith("in place") for b, how in hows.items() if "cache" in b), hows
    method = _method(et)
    prompt, new_tokens = [3, 7, 11, 5], 32
    with torch.no_grad():
        want = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                              min_new_tokens=new_tokens)[0].tolist()
    tokens = list(prompt)
    step_logits = []
    for pos, token in enumerate(prompt):
        step_logits.append(method.execute([torch.tensor([[token]]), torch.tensor([pos])])[0][0, -1])
    while len(tokens) < len(want):
        tokens.append(int(step_logits[-1].argmax()))
        step_logits.append(
            method.execute([torch.tensor([[tokens[-1]]]), torch.tensor([len(tokens) - 1])])[0][0, -1])
    assert tokens == want
    # Every step's logits against eager's on the whole sequence (no cache):
    # within 1e-4 of the logits' magnitude.
    with torch.no_grad():
        eager = model(torch.tensor([tokens]), use_cache=False).logits[0]
    got = torch.stack(step_logits)
    assert float((got - eager).abs().max()) <= 1e-4 * float(eager.abs().max())
