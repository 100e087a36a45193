"""Operator schema helpers: argument binding, out variants, view copies."""
