"""Verifiers of the edge and out-variant (executorch) dialects."""
