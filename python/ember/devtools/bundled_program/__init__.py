"""Bundled programs (``.bpte``): a program with test inputs and expected outputs."""
