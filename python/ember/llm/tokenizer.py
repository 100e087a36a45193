"""Tokenizers from maintained libraries: HF `tokenizers` (tokenizer.json) and
`sentencepiece` (.model files), behind one small interface."""

from __future__ import annotations

import json
import os
from typing import Any, Protocol


class TokenizerError(ValueError):
    """A tokenizer file that cannot be loaded (missing, malformed, unknown kind)."""


class Tokenizer(Protocol):
    vocab_size: int

    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...
    def token_id(self, token: str) -> int | None: ...


class HFTokenizer:
    """A `tokenizers.Tokenizer` (tokenizer.json). `encode` adds no special
    tokens: the runner adds the program's BOS itself."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.vocab_size = int(tok.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)

    def token_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)


class SentencePieceTokenizer:
    """A `sentencepiece.SentencePieceProcessor` (.model)."""

    def __init__(self, sp: Any) -> None:
        self._sp = sp
        self.vocab_size = int(sp.get_piece_size())

    def encode(self, text: str) -> list[int]:
        return list(self._sp.encode(text))

    def decode(self, ids: list[int]) -> str:
        return self._sp.decode(list(ids))

    def token_id(self, token: str) -> int | None:
        i = self._sp.piece_to_id(token)
        return None if i == self._sp.unk_id() and token != self._sp.id_to_piece(i) else int(i)


class TransformersTokenizer:
    """A transformers tokenizer object (``AutoTokenizer``)."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.vocab_size = len(tok)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)

    def token_id(self, token: str) -> int | None:
        i = self._tok.convert_tokens_to_ids(token)
        return None if i is None or i == self._tok.unk_token_id else int(i)


def _load_json(path: str) -> HFTokenizer:
    import tokenizers

    try:
        with open(path, encoding="utf-8") as f:
            json.load(f)
        return HFTokenizer(tokenizers.Tokenizer.from_file(path))
    except Exception as e:  # json and tokenizers raise their own kinds
        raise TokenizerError(f"{path}: not a valid HF tokenizer.json ({e})") from e


def _load_sentencepiece(path: str) -> SentencePieceTokenizer:
    try:
        import sentencepiece
    except ImportError as e:
        raise TokenizerError(
            f"{path}: SentencePiece models need the `sentencepiece` package (pip install sentencepiece)"
        ) from e
    sp = sentencepiece.SentencePieceProcessor()
    try:
        ok = sp.Load(path)
    except (OSError, RuntimeError) as e:
        raise TokenizerError(f"{path}: not a valid SentencePiece model ({e})") from e
    if not ok:
        raise TokenizerError(f"{path}: not a valid SentencePiece model")
    return SentencePieceTokenizer(sp)


def load_tokenizer(source: Any) -> Tokenizer:
    """A tokenizer from a path (tokenizer.json, a SentencePiece .model, or a
    directory holding one of them) or an object: a `tokenizers.Tokenizer`, a
    `sentencepiece.SentencePieceProcessor`, a transformers tokenizer, or one
    already wrapped. Raises `TokenizerError` naming the file and what is wrong."""
    if isinstance(source, HFTokenizer | SentencePieceTokenizer | TransformersTokenizer):
        return source
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if os.path.isdir(path):
            for name in ("tokenizer.json", "tokenizer.model"):
                if os.path.isfile(os.path.join(path, name)):
                    return load_tokenizer(os.path.join(path, name))
            raise TokenizerError(f"{path}: directory holds neither tokenizer.json nor tokenizer.model")
        if not os.path.isfile(path):
            raise TokenizerError(f"{path}: no such tokenizer file")
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
        if path.endswith(".json") or head.startswith(b"{"):
            return _load_json(path)
        return _load_sentencepiece(path)
    kind = type(source).__module__.split(".")[0]
    if kind == "tokenizers" and hasattr(source, "encode_batch"):
        return HFTokenizer(source)
    if kind == "sentencepiece":
        return SentencePieceTokenizer(source)
    if kind == "transformers" or hasattr(source, "convert_tokens_to_ids"):
        return TransformersTokenizer(source)
    raise TokenizerError(
        f"cannot use a {type(source).__name__} as a tokenizer: give a tokenizer.json or "
        f"SentencePiece .model path, a tokenizers.Tokenizer, a SentencePieceProcessor or a "
        f"transformers tokenizer")
