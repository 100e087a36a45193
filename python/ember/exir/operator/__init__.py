"""Operator schema helpers: argument binding, out variants, view copies."""

# Defines llama::custom_sdpa (fused attention over a KV cache, issue #18), so
# any process that handles Ember programs knows the op.
from ember.exir.operator import custom_sdpa as _custom_sdpa  # noqa: F401
