"""Partitioners decide which nodes of an edge program a backend takes.

``partition`` tags nodes (``node.meta["delegation_tag"] = tag``) and says,
per tag, which backend lowers them and with which compile specs. Nodes that
share a tag are fused into as few subgraphs as possible without creating a
cycle; each subgraph becomes one delegate call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from torch.export import ExportedProgram

from ember.exir.backend.compile_spec_schema import CompileSpec

DELEGATION_TAG = "delegation_tag"


@dataclass
class DelegationSpec:
    backend_id: str
    compile_specs: list[CompileSpec] = field(default_factory=list)


@dataclass
class PartitionResult:
    """The program with tagged nodes, and each tag's backend."""

    tagged_exported_program: ExportedProgram
    partition_tags: dict[str, DelegationSpec]


class Partitioner(ABC):
    """Base class of partitioners; ``partition`` may tag the program in place."""

    @abstractmethod
    def partition(self, exported_program: ExportedProgram) -> PartitionResult: ...
