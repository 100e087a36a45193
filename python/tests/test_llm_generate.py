"""ember.llm.generate: streamed text, stop tokens, sampling, prefill in
chunks, weights in a .ptd, and the errors it names (prompt longer than the
cache, bad tokenizer files, unknown model classes)."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from ember import llm
from llm_testing import bpe_tokenizer, eager_greedy, llama, llama_program, sentencepiece_model

PROMPT = "the cat sat on the mat"


def test_streamed_text_is_eager_greedy_decoded() -> None:
    model, et = llama_program()
    tok = bpe_tokenizer()
    pieces: list[str] = []
    result = llm.generate(et, tok, PROMPT, max_new_tokens=20, on_text=pieces.append)
    ids = [1] + tok.encode(PROMPT, add_special_tokens=False).ids
    assert result.prompt_tokens == ids
    assert result.tokens == eager_greedy(model, ids, 20)
    prompt_text = tok.decode(ids, skip_special_tokens=True)
    assert prompt_text == PROMPT
    both = tok.decode(ids + result.tokens, skip_special_tokens=True)
    assert both.startswith(PROMPT) and result.text == both[len(PROMPT):]
    assert "".join(pieces) == result.text and len(pieces) > 1
    s = result.stats
    assert (s.prompt_tokens, s.new_tokens, s.stop_reason) == (len(ids), 20, "max_new_tokens")
    assert s.time_to_first_token_s >= s.prefill_s > 0 and s.decode_s > 0
    assert s.prefill_tokens_per_s > 0 and s.decode_tokens_per_s > 0
    assert "decode" in s.summary()
    # The iterator form gives the same pieces; a second run starts from an empty cache.
    stream = llm.stream(et, tok, PROMPT, max_new_tokens=20)
    assert list(stream) == pieces and stream.result.tokens == result.tokens


def test_stop_tokens_and_eos() -> None:
    _model, et = llama_program()
    tok = bpe_tokenizer()
    program = llm.LlmProgram(et)
    full = llm.generate(program, tok, PROMPT, max_new_tokens=12).tokens
    stop = full[5]
    first = full.index(stop)
    by_id = llm.generate(program, tok, PROMPT, max_new_tokens=12, stop_tokens=[stop])
    assert by_id.tokens == full[:first + 1] and by_id.stats.stop_reason == "stop token"
    piece = tok.id_to_token(stop)
    by_name = llm.generate(program, tok, PROMPT, max_new_tokens=12, stop_tokens=[piece])
    assert by_name.tokens == by_id.tokens
    with pytest.raises(ValueError, match="not in the tokenizer's vocabulary"):
        llm.generate(program, tok, PROMPT, stop_tokens=["no-such-token"])
    # The program's own EOS ids stop it too.
    program.eos_ids = [stop]
    assert llm.generate(program, tok, PROMPT, max_new_tokens=12).tokens == by_id.tokens


def test_sampling_is_seeded() -> None:
    _, et = llama_program()
    tok = bpe_tokenizer()
    program = llm.LlmProgram(et)
    a = llm.generate(program, tok, PROMPT, max_new_tokens=16, temperature=0.8, top_p=0.9, seed=7)
    b = llm.generate(program, tok, PROMPT, max_new_tokens=16, temperature=0.8, top_p=0.9, seed=7)
    greedy = llm.generate(program, tok, PROMPT, max_new_tokens=16)
    assert a.tokens == b.tokens and a.tokens != greedy.tokens
    # top_p small enough keeps only the most likely token: greedy again.
    assert llm.generate(program, tok, PROMPT, max_new_tokens=16, temperature=1.0, top_p=1e-6,
                        seed=3).tokens == greedy.tokens
    with pytest.raises(ValueError, match="top_p"):
        llm.Sampler(1.0, top_p=0.0)


def test_chunked_prefill_and_weights_in_a_ptd(tmp_path) -> None:
    """max_prefill_len=5 prefills a 16-token prompt in 4 calls; weights in a .ptd."""
    model = llama(layers=1, seed=1)
    et = llm.export(model, max_seq_len=40, max_prefill_len=5, eos_ids=[], external_weights=True)
    assert et.constant_methods["get_max_seq_len"] == 5
    assert et.constant_methods["get_max_context_len"] == 40
    assert list(et.data_files) == ["_default_external_constant.ptd"]
    et.save(tmp_path / "model.pte")
    et.write_tensor_data_to_file(tmp_path)
    weights = sum(p.numel() * 4 for p in model.parameters())
    assert (tmp_path / "_default_external_constant.ptd").stat().st_size >= weights
    # They are not in the .pte: its constants are a few lifted scalars.
    assert sum(len(b) for b in et.emitted.constant_buffers) < 1024
    tok = bpe_tokenizer()
    prompt = [1] + list(range(10, 25))
    result = llm.generate(str(tmp_path / "model.pte"), tok, prompt, max_new_tokens=12)
    assert result.tokens == eager_greedy(model, prompt, 12)


def test_prompt_longer_than_the_cache() -> None:
    _, et = llama_program()
    program = llm.LlmProgram(et)
    with pytest.raises(llm.PromptTooLongError, match="48 positions"):
        llm.generate(program, bpe_tokenizer(), " ".join(["the cat"] * 40), max_new_tokens=4)
    # A prompt that fits stops when the cache is full.
    result = llm.generate(program, bpe_tokenizer(), [1] + [5] * 40, max_new_tokens=20)
    assert result.stats.stop_reason == "cache full" and len(result.tokens) == 48 - 41 + 1


def test_bad_tokenizer_files(tmp_path) -> None:
    bad_json = tmp_path / "tokenizer.json"
    bad_json.write_text('{"version": "1.0", "model": {"type": "Nope"}}')
    with pytest.raises(llm.TokenizerError, match="not a valid HF tokenizer.json"):
        llm.load_tokenizer(bad_json)
    bad_model = tmp_path / "tokenizer.model"
    bad_model.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(llm.TokenizerError, match="not a valid SentencePiece model"):
        llm.load_tokenizer(bad_model)
    with pytest.raises(llm.TokenizerError, match="no such tokenizer file"):
        llm.load_tokenizer(tmp_path / "missing.model")
    with pytest.raises(llm.TokenizerError, match="neither tokenizer.json nor tokenizer.model"):
        llm.load_tokenizer(_empty_dir(tmp_path))
    with pytest.raises(llm.TokenizerError, match="cannot use a int"):
        llm.load_tokenizer(3)


def _empty_dir(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    return d


def test_tokenizer_files_load(tmp_path) -> None:
    bpe_tokenizer().save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "sp.model").write_bytes(sentencepiece_model())
    hf = llm.load_tokenizer(tmp_path)  # the directory's tokenizer.json
    sp = llm.load_tokenizer(tmp_path / "sp.model")
    for tok in (hf, sp):
        assert tok.vocab_size == 96
        ids = tok.encode(PROMPT)
        assert tok.decode(ids) == PROMPT
    assert sp.token_id("<s>") == 1 and hf.token_id("</s>") == 2


def test_unknown_model_class() -> None:
    config = transformers.GPTNeoXConfig(vocab_size=96, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=1, num_attention_heads=4)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with pytest.raises(llm.UnsupportedModelError, match="'gpt_neox'.*supported: llama"):
        llm.export(model, max_seq_len=16)
    with pytest.raises(llm.UnsupportedModelError, match="transformers causal-LM"):
        llm.export(torch.nn.Linear(2, 2), max_seq_len=16)
    _, et = llama_program()
    with pytest.raises(ValueError, match="max_prefill_len"):
        llm.export(llama(layers=1), max_seq_len=16, max_prefill_len=17)
    assert set(llm.METADATA_METHODS) <= set(et.constant_methods)


def test_decode_only_program_prefills_token_by_token() -> None:
    """max_prefill_len=1: no dynamic dimension; the runner feeds the prompt one token a call."""
    model = llama(layers=1, seed=2)
    et = llm.export(model, max_seq_len=24, max_prefill_len=1, eos_ids=[])
    assert et.constant_methods["enable_dynamic_shape"] is False
    program = llm.LlmProgram(et)
    assert not program.dynamic and program.max_tokens_per_call == 1
    prompt = [1, 9, 4, 33, 70, 12]
    result = llm.generate(program, bpe_tokenizer(), prompt, max_new_tokens=10)
    assert result.tokens == eager_greedy(model, prompt, 10)
    with pytest.raises(RuntimeError, match=r"input 0: expected shape \[1, 1\], got \[1, 2\]"):
        program.forward.execute([torch.tensor([[1, 2]]), torch.tensor([0, 1])])
