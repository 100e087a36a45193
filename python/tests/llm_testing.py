"""Shared pieces of the ember.llm tests: tiny random decoders, a tiny corpus,
tokenizers trained on it in the test (HF BPE, SentencePiece), and one
exported Llama program reused by every test in a process."""

from __future__ import annotations

import functools
import io
import random

import torch

VOCAB = 96


@functools.cache
def corpus() -> tuple[str, ...]:
    words = ["the", "a", "cat", "dog", "sat", "on", "mat", "ran", "fast", "slow", "red", "blue", "green", "tree", "house", "river", "stone", "bird", "sings", "loud", "quiet", "night", "day", "sun", "moon"]
    rng = random.Random(0)
    return tuple(" ".join(rng.choice(words) for _ in range(8)) for _ in range(200))


def llama(layers: int = 2, seed: int = 0) -> torch.nn.Module:
    import transformers

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, initializer_range=0.2,
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


@functools.cache
def llama_program() -> tuple[torch.nn.Module, object]:
    """The 2-layer Llama and its program (cache 48, prefill in one call, no
    EOS so every run goes to max_new_tokens; every position's logits, which
    tests compare with eager's)."""
    from ember import llm

    model = llama()
    return model, llm.export(model, max_seq_len=48, eos_ids=[], full_logits=True)


def eager_greedy(model: torch.nn.Module, prompt_ids: list[int], new_tokens: int) -> list[int]:
    import transformers

    saved = model.generation_config
    model.generation_config = transformers.GenerationConfig(pad_token_id=0, eos_token_id=None)
    try:
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt_ids]), max_new_tokens=new_tokens,
                                 do_sample=False)[0]
    finally:
        model.generation_config = saved
    return out[len(prompt_ids):].tolist()


@functools.cache
def bpe_tokenizer() -> object:
    """HF BPE (Metaspace, like SentencePiece) with exactly VOCAB ids; <unk>,
    <s>, </s> are 0, 1, 2."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False))
    assert tok.get_vocab_size() == VOCAB
    return tok


@functools.cache
def sentencepiece_model() -> bytes:
    """A SentencePiece BPE model with exactly VOCAB pieces (unk 0, bos 1, eos 2)."""
    import sentencepiece as spm

    f = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()), model_writer=f, vocab_size=VOCAB, model_type="bpe",
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    return f.getvalue()
