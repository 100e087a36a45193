"""Tools to see inside programs (#19): bundled test cases (``.bpte``) and
their verification on the C++ runtime; pictures of the memory plan, the
profile and the graph; the Inspector (profile rows joined with graph nodes
and source lines, as pandas tables) and numerical debugging (each op's
output on the runtime against eager). ``docs/devtools.md``.

Names load on first use, so drawing (``python -m ember.devtools.plot_cli``,
which ``ember-inspect --plot`` runs) does not import torch."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "MethodTestCase": "ember.devtools.bundled_program.config",
    "MethodTestSuite": "ember.devtools.bundled_program.config",
    "BundledProgram": "ember.devtools.bundled_program.core",
    "serialize_from_bundled_program_to_flatbuffer": "ember.devtools.bundled_program.serialize",
    "CaseResult": "ember.devtools.bundled_program.verify",
    "OutputResult": "ember.devtools.bundled_program.verify",
    "VerificationReport": "ember.devtools.bundled_program.verify",
    "verify": "ember.devtools.bundled_program.verify",
    "Inspector": "ember.devtools.inspector",
    "profile": "ember.devtools.inspector",
    "read_profile": "ember.devtools.profile_file",
    "NodeGap": "ember.devtools.numeric",
    "NumericGapReport": "ember.devtools.numeric",
    "capture_intermediate_outputs": "ember.devtools.numeric",
    "compare_with_eager": "ember.devtools.numeric",
    "eager_intermediate_outputs": "ember.devtools.numeric",
    "reference_program": "ember.devtools.numeric",
    "graph_dot": "ember.devtools.plots",
    "memory_plan_data": "ember.devtools.plots",
    "plot_graph": "ember.devtools.plots",
    "plot_memory_plan": "ember.devtools.plots",
    "plot_profile": "ember.devtools.plots",
    "profile_summary": "ember.devtools.plots",
}

__all__ = [
    "BundledProgram",
    "CaseResult",
    "Inspector",
    "MethodTestCase",
    "MethodTestSuite",
    "NodeGap",
    "NumericGapReport",
    "OutputResult",
    "VerificationReport",
    "capture_intermediate_outputs",
    "compare_with_eager",
    "eager_intermediate_outputs",
    "graph_dot",
    "memory_plan_data",
    "plot_graph",
    "plot_memory_plan",
    "plot_profile",
    "profile",
    "profile_summary",
    "read_profile",
    "reference_program",
    "serialize_from_bundled_program_to_flatbuffer",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'ember.devtools' has no attribute '{name}'")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
