"""llama::custom_sdpa (fused attention over a KV cache, issue #18): the kernel
against eager torch.nn.functional.scaled_dot_product_attention over the
cache, on every ISA build the host has; its refusals; and the whole flow
(export -> to_edge -> to_executorch -> runtime) of a module calling it.

Tolerance: max |ember - eager| <= 1e-5 * max |eager| (float32; measured
errors are about 5e-7 of the magnitude)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch
from ember import _C
from ember.exir.operator.custom_sdpa import custom_sdpa

TOL = 1e-5
OP = "llama::custom_sdpa.out"

# (batch, heads, kv_heads, seq, cache_len, head_dim, start_pos, is_causal, mask, scale)
# mask: None, "bool2" ([S, L] bool), "float4" ([B, 1, S, L] additive), "bool4h" ([1, H, S, L])
CASES = [
    (1, 8, 2, 1, 64, 64, 0, True, None, None),  # decode, first position
    (1, 8, 2, 1, 64, 64, 31, True, None, None),  # decode, middle
    (1, 8, 2, 1, 64, 64, 63, True, None, None),  # decode, last position of the cache
    (1, 8, 2, 17, 80, 128, 0, True, None, None),  # prefill from 0, head dim 128
    (1, 8, 2, 17, 80, 128, 30, True, None, None),  # prefill in the middle (chunked prefill)
    (1, 8, 2, 17, 80, 128, 63, True, None, None),  # prefill up to the cache's end
    (1, 6, 6, 9, 40, 33, 5, True, None, None),  # no grouping, odd head dim
    (1, 4, 1, 3, 150, 64, 140, True, None, None),  # one cache head (MQA), > 2 key blocks
    (2, 6, 3, 5, 40, 7, 12, True, None, 0.3),  # batch 2, explicit scale, tiny head dim
    (1, 8, 2, 6, 32, 64, 4, False, "bool2", None),  # explicit bool mask, no causal
    (2, 4, 2, 6, 32, 64, 4, False, "float4", None),  # additive float mask, broadcast heads
    (1, 4, 2, 6, 32, 64, 9, True, "bool4h", None),  # mask and causal together
    (1, 12, 4, 1, 70, 256, 69, True, None, None),  # head dim 256 (Gemma)
    (1, 8, 2, 0, 16, 64, 3, True, None, None),  # no query positions: empty out
]


def make_case(case, seed: int = 0):
    b, h, hkv, s, cache_len, d, start, causal, mask_kind, scale = case
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, s, d, generator=g)
    k = torch.randn(b, hkv, cache_len, d, generator=g)
    v = torch.randn(b, hkv, cache_len, d, generator=g)
    mask = None
    if mask_kind == "bool2":
        mask = torch.rand(s, cache_len, generator=g) > 0.3
        mask[:, 0] = True  # every row attends somewhere
    elif mask_kind == "float4":
        mask = torch.randn(b, 1, s, cache_len, generator=g)
    elif mask_kind == "bool4h":
        mask = torch.rand(1, h, s, cache_len, generator=g) > 0.5
    return q, k, v, start, mask, causal, scale


def eager(q, k, v, start, mask, causal, scale) -> torch.Tensor:
    """What transformers computes: SDPA over the whole cache, each cache head
    repeated for its query heads, positions >= start + S masked out."""
    s, h, cache_len = q.shape[2], q.shape[1], k.shape[2]
    group = h // k.shape[1]
    kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    pos = torch.arange(cache_len)
    rows = start + torch.arange(s)
    allowed = pos[None, :] <= rows[:, None] if causal else pos[None, :] < start + s
    if mask is None:
        full = allowed
    elif mask.dtype == torch.bool:
        full = mask & allowed
    else:
        full = mask.masked_fill(~allowed, -math.inf)
    return torch.nn.functional.scaled_dot_product_attention(q, kk, vv, attn_mask=full, scale=scale)


def run_kernel(q, k, v, start, mask, causal, scale, drop_p: float = 0.0) -> torch.Tensor:
    out = torch.empty(q.shape)
    _C.call_kernel(OP, [q, k, v, start, mask, drop_p, causal, scale, out])
    return out


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    if want.numel() == 0:
        return 0.0 if got.shape == want.shape else math.inf
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


def case_errors() -> list[float]:
    return [relative_error(run_kernel(*make_case(c)), eager(*make_case(c))) for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_kernel_matches_eager(case):
    args = make_case(case)
    got = run_kernel(*args)
    assert got.shape == args[0].shape
    assert relative_error(got, eager(*args)) <= TOL
    # The Python reference (python/ember/exir/operator/custom_sdpa.py) agrees too.
    assert relative_error(got, custom_sdpa(args[0], args[1], args[2], args[3], args[4], 0.0,
                                           args[5], args[6])) <= TOL


def test_every_isa_the_host_has():
    """The baseline, AVX2 and AVX-512 builds (EMBER_ISA caps the dispatch,
    read once per process): each level up to the host's in its own process."""
    levels = ["baseline", "avx2", "avx512", "amx"]
    host = _C.host_isa()
    for level in levels[: levels.index(host) + 1]:
        env = dict(os.environ, EMBER_ISA=level)
        run = subprocess.run([sys.executable, __file__], env=env, capture_output=True,
                             text=True, check=True)
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report["isa"] == level
        assert max(report["errors"]) <= TOL, (level, report["errors"])


def test_threads_give_the_same_bits():
    case = (1, 8, 2, 33, 64, 64, 20, True, None, None)
    before = _C.threads()
    try:
        _C.set_threads(1)
        one = run_kernel(*make_case(case))
        _C.set_threads(2)
        two = run_kernel(*make_case(case))
    finally:
        _C.set_threads(before)
    assert torch.equal(one, two)


def test_fully_masked_row_gives_zeros_as_eager():
    q, k, v, start, _, _, _ = make_case((1, 4, 2, 3, 16, 8, 2, False, None, None))
    mask = torch.ones(3, 16, dtype=torch.bool)
    mask[1] = False
    got = run_kernel(q, k, v, start, mask, False, None)
    want = eager(q, k, v, start, mask, False, None)
    assert torch.equal(got[:, :, 1], torch.zeros_like(got[:, :, 1]))
    assert relative_error(got, want) <= TOL


@pytest.mark.parametrize("seq", [4, 20], ids=["row kernel", "tiled kernel"])
def test_reads_only_positions_before_start_plus_seq(seq):
    """Cache positions past start_pos + S (stale or never written) do not
    matter, even as NaN: they are not read."""
    q, k, v, start, _, causal, scale = make_case((1, 8, 2, seq, 64, 32, 10, False, None, None))
    want = run_kernel(q, k, v, start, None, causal, scale)
    k[:, :, 10 + seq:] = math.nan
    v[:, :, 10 + seq:] = math.nan
    got = run_kernel(q, k, v, start, None, causal, scale)
    assert torch.equal(got, want)


@pytest.mark.parametrize("change, message", [
    ({"start": 60}, "start_pos: 60 + 5 query positions exceeds the cache's 64"),
    ({"start": -1}, "start_pos: -1"),
    ({"drop_p": 0.1}, "drop_p: must be 0"),
    ({"kv_heads": 3}, "3 cache heads do not divide query's 8 heads"),
    ({"head_dim": 520}, "head dim 520 exceeds 512"),
    ({"mask": torch.zeros(5, 12)}, "attn_mask: 12 columns, needs start_pos + S = 15"),
    ({"mask": torch.zeros(3, 64)}, "does not broadcast"),
    ({"mask": torch.zeros(5, 64, dtype=torch.int32)}, "attn_mask: dtype int32"),
    ({"key_dtype": torch.float64}, "key: dtype float64"),
    ({"strided_query": True}, "query: must be contiguous"),
])
def test_refusals_name_the_argument(change, message):
    kv_heads = change.get("kv_heads", 2)
    d = change.get("head_dim", 16)
    q = torch.randn(1, 8, 5, d)
    if change.get("strided_query"):
        q = q.transpose(1, 2).contiguous().transpose(1, 2)  # dim order 0, 2, 1, 3
    k = torch.randn(1, kv_heads, 64, d, dtype=change.get("key_dtype", torch.float32))
    v = torch.randn(1, kv_heads, 64, d, dtype=k.dtype)
    out = torch.empty(1, 8, 5, d)
    args = [q, k, v, change.get("start", 10), change.get("mask"), change.get("drop_p", 0.0),
            True, None, out]
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace("+", r"\+")):
        _C.call_kernel(OP, args)


class CachedAttention(torch.nn.Module):
    """A KV cache written with index_copy_, then llama::custom_sdpa over it."""

    def __init__(self, heads: int = 4, kv_heads: int = 2, length: int = 24, dim: int = 16) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(1, kv_heads, length, dim))
        self.register_buffer("v", torch.zeros(1, kv_heads, length, dim))

    def forward(self, q, k, v, input_pos):
        self.k.index_copy_(2, input_pos, k)
        self.v.index_copy_(2, input_pos, v)
        start = input_pos[0].item()
        return torch.ops.llama.custom_sdpa(q, self.k, self.v, start, None, 0.0, True, None)


def test_whole_flow_prefill_then_decode_matches_eager():
    from ember.exir import to_edge
    from ember.runtime import Runtime

    model = CachedAttention()
    seq = torch.export.Dim("seq", min=1, max=24)

    def inputs(start: int, n: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(1, 4, n, 16, generator=g), torch.randn(1, 2, n, 16, generator=g),
                torch.randn(1, 2, n, 16, generator=g), torch.arange(start, start + n))

    ep = torch.export.export(model, inputs(0, 3, 0),
                             dynamic_shapes=({2: seq}, {2: seq}, {2: seq}, {0: seq}))
    et = to_edge(ep).to_executorch()
    targets = {str(n.target) for n in et.exported_program().graph.nodes}
    assert "llama.custom_sdpa.out" in targets
    # The cache update stays in place: only the new entries are written per run.
    assert all(w.how.startswith("in place") for w in et.memory_plan().write_backs)
    method = Runtime.get().load_program(et.buffer).load_method()
    eager_model = CachedAttention()
    start = 0
    for step, n in enumerate((7, 1, 1, 5, 1)):
        args = inputs(start, n, step + 1)
        want = eager_model(*args)
        (got,) = method.execute(list(args))
        assert relative_error(got, want) <= TOL
        start += n


class StaticCacheAttention(torch.nn.Module):
    """What transformers' static cache exports, in small: index_copy_ into the
    cache, repeat_kv, SDPA over the whole cache with a mask built from the
    positions (causal; with `window`, also a sliding window)."""

    def __init__(self, window: int | None = None, length: int = 20) -> None:
        super().__init__()
        self.window = window
        self.register_buffer("k", torch.zeros(1, 2, length, 8))
        self.register_buffer("v", torch.zeros(1, 2, length, 8))

    def forward(self, q, k, v, input_pos):
        k_all = self.k.index_copy_(2, input_pos, k)
        v_all = self.v.index_copy_(2, input_pos, v)
        cache = torch.arange(self.k.shape[2])
        mask = cache[None, :] <= input_pos[:, None]
        if self.window is not None:
            mask = mask & (cache[None, :] > input_pos[:, None] - self.window)

        def repeat(x):
            b, h, n, d = x.shape
            return x[:, :, None].expand(b, h, 2, n, d).reshape(b, h * 2, n, d)

        return torch.nn.functional.scaled_dot_product_attention(
            q, repeat(k_all), repeat(v_all), attn_mask=mask[None, None], scale=0.3)


def _attention_inputs(n: int, start: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 4, n, 8, generator=g), torch.randn(1, 2, n, 8, generator=g),
            torch.randn(1, 2, n, 8, generator=g), torch.arange(start, start + n))


def _fused_program(model: torch.nn.Module):
    from ember.exir import to_edge
    from ember.exir.passes.kv_cache_attention import fuse_kv_cache_attention

    seq = torch.export.Dim("seq", min=1, max=8)
    ep = torch.export.export(model, _attention_inputs(3, 0),
                             dynamic_shapes=({2: seq}, {2: seq}, {2: seq}, {0: seq}))
    report = fuse_kv_cache_attention(ep, _attention_inputs, 8)
    return report, to_edge(ep).to_executorch()


def _targets(et) -> list[str]:
    return [str(n.target) for n in et.exported_program().graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("window", [None, 4])
def test_pass_fuses_causal_cache_attention_only(window):
    from ember.runtime import Runtime

    report, et = _fused_program(StaticCacheAttention(window))
    fused = "llama.custom_sdpa.out" in _targets(et)
    if window is None:
        assert len(report.fused) == 1 and not report.kept
        assert fused and not any("bmm" in t or "softmax" in t for t in _targets(et))
        # The cache update is still written in place.
        assert all(w.how.startswith("in place") for w in et.memory_plan().write_backs)
    else:
        assert not report.fused and len(report.kept) == 1  # a sliding window is not causal
        assert not fused
    method = Runtime.get().load_program(et.buffer).load_method()
    eager_model = StaticCacheAttention(window)
    start = 0
    for step, n in enumerate((8, 1, 1, 3, 1)):
        args = _attention_inputs(n, start, step + 1)
        (got,) = method.execute(list(args))
        assert relative_error(got, eager_model(*args)) <= TOL
        start += n


def test_llm_export_fuses_every_layer_and_can_be_turned_off():
    transformers = pytest.importorskip("transformers")
    from ember import llm
    from llm_testing import llama

    def export(on: bool):
        model = llama(layers=2)
        return model, llm.export(model, max_seq_len=24, use_sdpa_with_kv_cache=on, eos_ids=[],
                                 full_logits=True)

    seq = [1, 5, 9, 3, 7, 11]
    for on in (True, False):
        model, et = export(on)
        assert et.constant_methods["use_sdpa_with_kv_cache"] is on
        assert _targets(et).count("llama.custom_sdpa.out") == (2 if on else 0)
        program = llm.LlmProgram(et)
        got = program.forward.execute([torch.tensor([seq]), torch.arange(len(seq))])[0][0]
        step = program.forward.execute([torch.tensor([[4]]), torch.tensor([len(seq)])])[0][0]
        with torch.no_grad():
            want = model(torch.tensor([seq + [4]]), use_cache=False).logits[0]
        assert relative_error(got, want[:-1]) <= 1e-4
        assert relative_error(step, want[-1:]) <= 1e-4
    assert transformers is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("exponent", [2.0, 2, 3.0, 3, -1.0, -2.0, 0.5, 1.7],
                         ids=["2.0", "int 2", "3.0", "int 3", "-1.0", "-2.0", "0.5", "1.7"])
def test_pow_by_a_zero_dim_exponent_is_eagers_scalar_pow(dtype, exponent):
    """RMS norm's x ** 2 and GPT-2's GELU x ** 3 reach the kernel as
    pow.Tensor_Tensor with a 0-dim exponent (to_edge makes scalars tensors):
    they run as eager's x ** 2 and x ** 3 with a Python number (the model's
    source) do, as products (x * x, x * x * x), and 1/x and 1/(x * x) for -1
    and -2: the same bits in float32 and float64. Other exponents are
    std::pow, within an ulp of eager's (which is sqrt for float32's 0.5)."""
    x = (torch.randn(5, 37, generator=torch.Generator().manual_seed(0)) * 50).to(dtype)
    x[0, :4] = torch.tensor([math.nan, math.inf, -math.inf, -0.0])
    e = torch.tensor(exponent, dtype=torch.float64 if isinstance(exponent, float) else torch.int64)
    out = torch.empty_like(x)
    _C.call_kernel("aten::pow.Tensor_Tensor_out", [x, e, out])
    want = torch.pow(x, exponent)
    exact = exponent in (2, 3, -1, -2) and dtype in (torch.float32, torch.float64)
    rtol = 0 if exact else (1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6)
    if exponent == 0.5:
        want = torch.pow(x, e)  # pow's rules at -inf and -0, not sqrt's
    torch.testing.assert_close(out, want, equal_nan=True, rtol=rtol, atol=0)


if __name__ == "__main__":
    # One ISA level's errors, for test_every_isa_the_host_has.
    print(json.dumps({"isa": _C.cpu_isa(), "errors": case_errors()}))
