"""LLMs on Ember: export a transformers decoder with a static KV cache
(`export`), and generate text from the program (`generate`, `stream`) with a
tokenizer from HF `tokenizers` or `sentencepiece` (`load_tokenizer`).
`docs/llm.md` describes the program's methods and the runners (this one and
the C++ `ember-llm`)."""

from ember.llm.export import METADATA_METHODS, SUPPORTED_MODEL_TYPES, UnsupportedModelError, export
from ember.llm.generate import (
    GenerationResult,
    GenerationStats,
    PromptTooLongError,
    TextStream,
    generate,
    stream,
)
from ember.llm.program import LlmProgram
from ember.llm.sampler import Sampler
from ember.llm.tokenizer import TokenizerError, load_tokenizer

__all__ = [
    "METADATA_METHODS", "SUPPORTED_MODEL_TYPES", "GenerationResult", "GenerationStats", "LlmProgram",
    "PromptTooLongError", "Sampler", "TextStream", "TokenizerError", "UnsupportedModelError", "export",
    "generate", "load_tokenizer", "stream",
]
