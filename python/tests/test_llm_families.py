"""ember.llm.export per transformers decoder family (small random configs):
greedy generation through ember.llm.generate equals eager `generate` token for
token over 32 new tokens, the prompt prefilled in one call; logits within 1e-4
of their magnitude."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from ember import llm
from llm_testing import VOCAB, eager_greedy, llama_program

NEW_TOKENS = 32
# Wider than the default 0.02 so the random models do not settle on one token.
INIT = 0.2
# One layer (the shared Llama program has two): export time dominates these tests.
SMALL = {"vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
             "num_attention_heads": 4, "num_key_value_heads": 2, "initializer_range": INIT,
             "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}

CONFIGS = {
    "llama": None,  # llm_testing.llama_program (two layers)
    "qwen2": lambda: transformers.Qwen2Config(**SMALL),
    "qwen3": lambda: transformers.Qwen3Config(**SMALL, head_dim=8),
    # Gemma ties the LM head to its (scaled) embedding: at small weights it only
    # echoes the last token.
    "gemma": lambda: transformers.GemmaConfig(**{**SMALL, "initializer_range": 0.5}, head_dim=8),
    "phi3": lambda: transformers.Phi3Config(**SMALL),
    "mistral": lambda: transformers.MistralConfig(**SMALL, head_dim=8),
    "gpt2": lambda: transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=4, n_positions=64, initializer_range=INIT,
        bos_token_id=1, eos_token_id=2),
}


def word_tokenizer() -> object:
    """A WordLevel tokenizer whose words w0..w95 are the ids 0..95."""
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({f"w{i}": i for i in range(VOCAB)},
                                                           unk_token="w0"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    return tok


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_greedy_generation_equals_eager(family: str) -> None:
    if family == "llama":
        model, et = llama_program()
    else:
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(CONFIGS[family]()).eval()
        # No EOS: both sides run all 32 steps (eager's min_new_tokens would mask EOS logits).
        et = llm.export(model, max_seq_len=48, eos_ids=[], full_logits=True)
    assert et.constant_methods["enable_dynamic_shape"] is True
    # Every attention runs as llama::custom_sdpa (docs/llm.md, fused attention).
    assert et.constant_methods["use_sdpa_with_kv_cache"] is True
    program = llm.LlmProgram(et)
    tok = word_tokenizer()
    prompt = "w3 w7 w11 w5 w9 w40"
    result = llm.generate(program, tok, prompt, max_new_tokens=NEW_TOKENS)
    ids = [1] + [int(w[1:]) for w in prompt.split()]
    assert result.prompt_tokens == ids
    want = eager_greedy(model, ids, NEW_TOKENS)
    assert result.tokens == want, family
    assert len(set(want)) > 3, f"{family}: the random model repeats one token; the check is weak"
    assert result.text == " " + " ".join(f"w{t}" for t in want)
    # Logits of a one-call prefill of the whole sequence against eager's.
    program.reset()
    seq = ids + want[:-1]
    got = program.forward.execute([torch.tensor([seq]), torch.arange(len(seq))])[0][0]
    with torch.no_grad():
        eager = model(torch.tensor([seq]), use_cache=False).logits[0]
    assert float((got - eager).abs().max()) <= 1e-4 * float(eager.abs().max())
