"""Text generation on an exported LLM program, streamed, with timings."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ember.llm.program import LlmProgram
from ember.llm.sampler import Sampler
from ember.llm.tokenizer import Tokenizer, load_tokenizer


class PromptTooLongError(ValueError):
    """The prompt does not fit the program's KV cache."""


@dataclasses.dataclass
class GenerationStats:
    prompt_tokens: int = 0
    new_tokens: int = 0
    time_to_first_token_s: float = 0.0  # prefill + choosing the first new token
    prefill_s: float = 0.0
    decode_s: float = 0.0  # from the first new token to the last (forward calls, sampling, text)
    stop_reason: str = ""  # "stop token", "max_new_tokens" or "cache full"

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.prefill_s if self.prefill_s > 0 else 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        steps = max(self.new_tokens - 1, 0)
        return steps / self.decode_s if self.decode_s > 0 else 0.0

    def summary(self) -> str:
        return (f"prompt {self.prompt_tokens} tokens, {self.new_tokens} new ({self.stop_reason}); "
                f"time to first token {self.time_to_first_token_s * 1e3:.1f} ms; "
                f"prefill {self.prefill_tokens_per_s:.1f} tok/s; "
                f"decode {self.decode_tokens_per_s:.1f} tok/s")


@dataclasses.dataclass
class GenerationResult:
    text: str
    tokens: list[int]  # the new tokens (a stop token included)
    prompt_tokens: list[int]
    stats: GenerationStats


class TextStream:
    """Iterator over the new text as it is decoded; `.result` is set once it
    is exhausted."""

    def __init__(self, pieces: Iterator[str], holder: dict[str, Any]) -> None:
        self._pieces = pieces
        self._holder = holder

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        return next(self._pieces)

    @property
    def result(self) -> GenerationResult | None:
        return self._holder.get("result")


def _as_program(program: Any, data: Any) -> LlmProgram:
    return program if isinstance(program, LlmProgram) else LlmProgram(program, data=data)


def _stop_ids(program: LlmProgram, tokenizer: Tokenizer, stop: Iterable[int | str] | None) -> set[int]:
    ids = set(program.eos_ids)
    for s in stop or ():
        if isinstance(s, int):
            ids.add(s)
            continue
        i = tokenizer.token_id(s)
        if i is None:
            raise ValueError(f"stop token {s!r} is not in the tokenizer's vocabulary")
        ids.add(i)
    return ids


def stream(program: Any, tokenizer: Any, prompt: str | list[int], max_new_tokens: int = 128,
           temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
           stop_tokens: Iterable[int | str] | None = None, add_bos: bool | None = None,
           data: Any = None) -> TextStream:
    """Like `generate`, as an iterator of text pieces (see `TextStream`)."""
    holder: dict[str, Any] = {}
    llm = _as_program(program, data)
    tok = load_tokenizer(tokenizer)
    prompt_ids = list(prompt) if isinstance(prompt, list) else tok.encode(prompt)
    if (add_bos is None and llm.bos_id is not None) or add_bos:
        if llm.bos_id is None:
            raise ValueError("add_bos=True but the program has no BOS id (get_bos_id is -1)")
        if not prompt_ids or prompt_ids[0] != llm.bos_id:
            prompt_ids = [llm.bos_id] + prompt_ids
    if not prompt_ids:
        raise ValueError("the prompt is empty (no tokens and no BOS)")
    if len(prompt_ids) >= llm.max_context_len:
        raise PromptTooLongError(
            f"the prompt has {len(prompt_ids)} tokens but the program's KV cache holds "
            f"{llm.max_context_len} positions (export with a larger max_seq_len, or shorten it)")
    bad = [t for t in prompt_ids if not 0 <= t < llm.vocab_size]
    if bad:
        raise ValueError(f"prompt token ids {bad[:5]} are outside the program's vocabulary "
                         f"of {llm.vocab_size}: tokenizer and model do not match")
    stops = _stop_ids(llm, tok, stop_tokens)
    sampler = Sampler(temperature, top_p, seed)
    return TextStream(_run(llm, tok, prompt_ids, max_new_tokens, sampler, stops, holder), holder)


def _run(llm: LlmProgram, tok: Tokenizer, prompt_ids: list[int], max_new_tokens: int,
         sampler: Sampler, stops: set[int], holder: dict[str, Any]) -> Iterator[str]:
    stats = GenerationStats(prompt_tokens=len(prompt_ids))
    new: list[int] = []
    emitted = ""
    # The new text is what decoding prompt + new tokens adds to the prompt's
    # text, so a word-initial piece gets its space (SentencePiece's "▁").
    prompt_text = tok.decode(prompt_ids)

    def continuation(ids: list[int]) -> str:
        text = tok.decode(prompt_ids + ids)
        return text[len(prompt_text):] if text.startswith(prompt_text) else tok.decode(ids)

    llm.reset()
    t0 = time.perf_counter()
    logits = llm.prefill(prompt_ids)
    stats.prefill_s = time.perf_counter() - t0
    pos = len(prompt_ids)
    t_first = t_last = t0
    stats.stop_reason = "max_new_tokens"
    while len(new) < max_new_tokens:
        token = sampler(logits)
        new.append(token)
        t_last = time.perf_counter()
        if len(new) == 1:
            t_first = t_last
            stats.time_to_first_token_s = t_first - t0
        if token in stops:
            stats.stop_reason = "stop token"
            break
        text = continuation([t for t in new if t not in stops])
        # Hold back a piece that ends inside a multi-byte character.
        if len(text) > len(emitted) and not text.endswith("\ufffd") and text.startswith(emitted):
            yield text[len(emitted):]
            emitted = text
        if len(new) == max_new_tokens:
            break
        if pos >= llm.max_context_len:
            stats.stop_reason = "cache full"
            break
        logits = llm.decode(token, pos)
        pos += 1
    stats.new_tokens = len(new)
    stats.decode_s = t_last - t_first
    text = continuation([t for t in new if t not in stops])
    if len(text) > len(emitted) and text.startswith(emitted):
        yield text[len(emitted):]
    holder["result"] = GenerationResult(text=text, tokens=new, prompt_tokens=prompt_ids, stats=stats)


def generate(program: Any, tokenizer: Any, prompt: str | list[int], max_new_tokens: int = 128,
             temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
             stop_tokens: Iterable[int | str] | None = None,
             on_text: Callable[[str], None] | None = None, add_bos: bool | None = None,
             data: Any = None) -> GenerationResult:
    """Generates up to `max_new_tokens` after `prompt` (text, or token ids).

    `program`: an `ExecutorchProgramManager` from `ember.llm.export`, a `.pte`
    path or bytes (`data`: its `.ptd`), or an `LlmProgram` (loaded once, reused).
    `tokenizer`: a tokenizer.json / SentencePiece .model path or tokenizer
    object (`load_tokenizer`). `temperature` 0 is greedy; else top-p sampling
    seeded with `seed`. Generation stops at the program's EOS ids, at any of
    `stop_tokens` (ids or token strings), at `max_new_tokens` or when the cache
    is full. `on_text` receives the new text piece by piece as it is decoded.
    BOS is put first when the program has one (`add_bos=False` to not).
    Returns the text, the new token ids and `GenerationStats` (time to first
    token, prefill and decode tokens/s)."""
    s = stream(program, tokenizer, prompt, max_new_tokens, temperature, top_p, seed, stop_tokens,
               add_bos, data)
    for piece in s:
        if on_text is not None:
            on_text(piece)
    assert s.result is not None
    return s.result
