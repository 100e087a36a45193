"""The LLM benchmark's GGUF writer (bench/models/llm_gguf.py): the q/k row
permutation gives GGUF's interleaved rotary embedding the same scores as
Hugging Face's rotate_half one, and (when llama-cpp-python and gguf are
installed: bench/requirements-llm.txt) llama.cpp on the written F32 file
gives eager's logits and greedy tokens; Q8_0 and Q4_0 files load and stay
close to them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "models"))

import llm_gguf

transformers = pytest.importorskip("transformers")


def rope_rotate_half(x: torch.Tensor, pos: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Hugging Face's rotary embedding on [..., positions, head_dim]: i turns with i + d/2."""
    d = x.shape[-1]
    freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = pos[:, None].double() * freq[None, :]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    rot = torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rot * sin


def rope_interleaved(x: torch.Tensor, pos: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """GGUF llama's rotary embedding: adjacent dimensions 2i and 2i + 1 turn together."""
    d = x.shape[-1]
    freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = pos[:, None].double() * freq[None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * ang.cos() - b * ang.sin()
    out[..., 1::2] = a * ang.sin() + b * ang.cos()
    return out


@pytest.mark.parametrize("n_head,n_kv", [(4, 4), (4, 2), (8, 1)])
def test_permuted_rows_give_the_same_attention_scores(n_head: int, n_kv: int) -> None:
    g = torch.Generator().manual_seed(0)
    d, hidden, s = 16, 32, 7
    wq = torch.randn(n_head * d, hidden, generator=g, dtype=torch.float64)
    wk = torch.randn(n_kv * d, hidden, generator=g, dtype=torch.float64)
    x = torch.randn(s, hidden, generator=g, dtype=torch.float64)
    pos = torch.arange(3, 3 + s)

    def scores(wq, wk, rope):
        q = rope((x @ wq.T).view(s, n_head, d).transpose(0, 1), pos)
        k = rope((x @ wk.T).view(s, n_kv, d).transpose(0, 1), pos)
        k = k.repeat_interleave(n_head // n_kv, 0)
        return q @ k.transpose(1, 2)

    hf = scores(wq, wk, rope_rotate_half)
    gguf = scores(torch.from_numpy(llm_gguf.permute_for_rope(wq.numpy(), n_head)),
                  torch.from_numpy(llm_gguf.permute_for_rope(wk.numpy(), n_kv)), rope_interleaved)
    torch.testing.assert_close(gguf, hf, rtol=1e-9, atol=1e-9 * float(hf.abs().max()))
    # Without the permutation the layouts disagree (so the check above can fail).
    assert not torch.allclose(scores(wq, wk, rope_interleaved), hf, rtol=1e-3, atol=1e-3)


def tiny_llama() -> torch.nn.Module:
    """2 layers, grouped-query attention; weights drawn wide enough that the
    attention pattern (and so the rotary layout) decides the logits."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, initializer_range=0.2,
        max_position_embeddings=256, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


@pytest.fixture(scope="module")
def llamacpp():
    pytest.importorskip("gguf")
    pytest.importorskip("llama_cpp")
    import llm_llamacpp

    return llm_llamacpp


PROMPT = [1, 17, 250, 3, 99, 42, 400, 7, 311, 64, 5, 128]


def eager_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


def llamacpp_logits(llamacpp, gguf: Path, ids: list[int]) -> torch.Tensor:
    llm = llamacpp.load(gguf, n_ctx=64, threads=1, logits_all=True, type_k=0, type_v=0)
    llm.eval(ids)
    return torch.from_numpy(llm.scores[:len(ids)].copy())


def test_llamacpp_on_f32_gguf_matches_eager(llamacpp, tmp_path: Path) -> None:
    from llm_testing import eager_greedy

    model = tiny_llama()
    path = llm_gguf.write_gguf(model, tmp_path / "tiny-f32.gguf", "F32")
    want = eager_logits(model, PROMPT)
    got = llamacpp_logits(llamacpp, path, PROMPT)
    scale = float(want.abs().max())
    assert (got - want).abs().max() <= 1e-4 * scale

    new = 24
    eager = eager_greedy(model, PROMPT, new)
    assert len(set(eager)) > 3, "the random model repeats itself: the comparison would say little"
    # F32 KV cache: llama.cpp's default F16 cache could flip a near tie.
    llm = llamacpp.load(path, n_ctx=64, threads=1, type_k=0, type_v=0)
    tokens, _ = llamacpp.greedy(llm, PROMPT, new)
    assert tokens == eager


@pytest.mark.parametrize("precision", ["Q8_0", "Q4_0"])
def test_llamacpp_on_quantized_gguf_matches_its_dequantized_weights(llamacpp, tmp_path: Path,
                                                                    precision: str) -> None:
    """llama.cpp reads the blocks gguf.quants wrote: its logits are those of eager on the
    weights dequantized back (up to llama.cpp quantizing activations to 8 bits for its dot
    products). Against the float model Q4_0 drifts far (correlation about 0.9 here)."""
    import copy

    import gguf

    model = tiny_llama()
    f32 = llm_gguf.write_gguf(model, tmp_path / "tiny-f32.gguf", "F32")
    q = llm_gguf.write_gguf(model, tmp_path / f"tiny-{precision}.gguf", precision)
    assert q.stat().st_size < f32.stat().st_size / (3 if precision == "Q8_0" else 5)
    qtype = getattr(gguf.GGMLQuantizationType, precision)
    dequantized = copy.deepcopy(model)
    with torch.no_grad():
        for p in dequantized.parameters():
            if p.ndim == 2:
                blocks = gguf.quants.quantize(p.numpy(), qtype)
                p.copy_(torch.from_numpy(gguf.quants.dequantize(blocks, qtype)))
    want = eager_logits(dequantized, PROMPT).flatten().double()
    got = llamacpp_logits(llamacpp, q, PROMPT).flatten().double()
    assert torch.corrcoef(torch.stack([want, got]))[0, 1] >= 0.999
    assert (got - want).abs().max() <= 0.1 * want.abs().max()


def test_vocab_has_the_model_size_and_keeps_sentencepiece_ids(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    import llm_testing

    sp = tmp_path / "t.model"
    sp.write_bytes(llm_testing.sentencepiece_model())
    tokens, scores, types = llm_gguf.llama_vocab(512, sp)
    assert len(tokens) == len(scores) == len(types) == 512
    assert len(set(tokens)) == 512
    import sentencepiece as spm

    proc = spm.SentencePieceProcessor(model_file=str(sp))
    assert tokens[:proc.get_piece_size()] == [proc.id_to_piece(i)
                                              for i in range(proc.get_piece_size())]
    assert "<0x0A>" in tokens
