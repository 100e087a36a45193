"""ember.llm.export(quantize=...): torchao weight-only linear layers, fused.

A small random Llama exported with int8 (per channel) and int4 (groups of 32)
weights: every projection runs ember_quantized::linear_weight_only, the
prompt's logits equal eager's quantized model within 1e-5 of their magnitude,
greedy decoding follows eager's quantized model, and the file is smaller.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
import transformers as tf
from ember import llm
from ember.runtime import Runtime


def tiny_llama() -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=128)
    return tf.LlamaForCausalLM(cfg).eval()


@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_quantized_export_matches_eager_quantized_model(scheme):
    model = tiny_llama()
    fp32_bytes = len(llm.export(tiny_llama(), max_seq_len=32, full_logits=True).buffer)
    et = llm.export(model, max_seq_len=32, quantize=scheme, full_logits=True)
    ops = [str(n.target) for n in et.exported_program().graph.nodes if n.op == "call_function"]
    # q, k, v, o, gate, up, down per layer, and the output head.
    assert sum("linear_weight_only" in o for o in ops) == 2 * 7 + 1
    assert len(et.buffer) < 0.5 * fp32_bytes
    method = Runtime.get().load_program(bytes(et.buffer)).load_method("forward")
    tokens = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(1))
    got = method.execute([tokens, torch.arange(8)])[0]
    with torch.no_grad():
        want = model(tokens).logits
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="quantize='int3': supported: int8, int4"):
        llm.export(tiny_llama(), max_seq_len=16, quantize="int3")


@pytest.mark.parametrize("scheme", ["8da4w", "8da8w"])
def test_dynamic_activation_export_decodes_as_eager(scheme):
    """8da4w / 8da8w (torchao's Int8DynamicActivationIntxWeightConfig): every
    projection runs ember_quantized::linear_dynamic_intx; greedy decoding (a
    prompt, then one token per call) picks eager's quantized model's tokens.
    Logits: within 2e-2 of their magnitude. One layer's outputs match eager
    within 1e-6 (the kernel quantizes rows to eager's int8 values; only float
    sums differ in order), but where a value times 1/scale lies on a rounding
    tie, that last-bit difference moves it one int8 step in the next layer:
    measured 3e-7 (8da4w) and 0.6-1.1% (8da8w, from the second layer on)."""
    model = tiny_llama()
    et = llm.export(model, max_seq_len=32, quantize=scheme)
    ops = [str(n.target) for n in et.exported_program().graph.nodes if n.op == "call_function"]
    assert sum("linear_dynamic_intx" in o for o in ops) == 2 * 7 + 1
    assert not any("linear_weight_only" in o for o in ops)
    method = Runtime.get().load_program(bytes(et.buffer)).load_method("forward")
    tokens = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(2))
    got = method.execute([tokens, torch.arange(8)])[0][:, -1]
    for step in range(8):
        with torch.no_grad():
            want = model(tokens).logits[:, -1]
        err = (got - want).abs().max().item() / want.abs().max().item()
        assert err <= 2e-2, step
        nxt = int(got.argmax())
        assert nxt == int(want.argmax()), step
        tokens = torch.cat([tokens, torch.tensor([[nxt]])], dim=1)
        pos = tokens.shape[1] - 1
        got = method.execute([tokens[:, -1:], torch.tensor([pos])])[0][:, -1]


def test_last_position_logits_only():
    """By default (full_logits=False) forward returns [1, 1, vocab], the last
    position's logits (the output layer runs on one row), for a prompt and
    for a decode step; fp32, so within 1e-5 of eager's."""
    model = tiny_llama()
    et = llm.export(model, max_seq_len=32)
    method = Runtime.get().load_program(bytes(et.buffer)).load_method("forward")
    tokens = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(3))
    got = method.execute([tokens, torch.arange(8)])[0]
    with torch.no_grad():
        want = model(tokens).logits[:, -1:]
    assert got.shape == (1, 1, 256)
    assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()
    nxt = torch.tensor([[int(got.argmax())]])
    got = method.execute([nxt, torch.tensor([8])])[0]
    with torch.no_grad():
        want = model(torch.cat([tokens, nxt], dim=1)).logits[:, -1:]
    assert got.shape == (1, 1, 256)
    assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()
