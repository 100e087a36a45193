"""Edit the lifted inputs of an ``ExportedProgram``: read the tensor behind a
parameter, buffer or constant placeholder, add ``CONSTANT_TENSOR`` inputs,
drop unused ones, and rebuild the program with its signature, state dict
and constants kept in step with the graph's placeholders.

New constants go just before the first user input, so lifted inputs stay
ahead of user inputs as ``torch.export`` orders them.
"""

from __future__ import annotations

import torch
from torch._guards import detect_fake_mode
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, InputSpec, TensorArgument

from ember.exir.exported import rebuild

_LIFTED = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


class LiftedConstants:
    """The lifted inputs of ``ep``, edited in place on ``gm`` (``ep``'s graph
    module by default); ``ep`` itself is left as it is."""

    def __init__(self, ep: ExportedProgram, gm: torch.fx.GraphModule | None = None) -> None:
        self.ep = ep
        self.gm = gm if gm is not None else ep.graph_module
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        self.specs = dict(zip(placeholders, ep.graph_signature.input_specs, strict=True))
        self.state_dict = dict(ep.state_dict)
        self.constants = dict(ep.constants)
        self.fake_mode = detect_fake_mode(
            [n.meta["val"] for n in self.gm.graph.nodes if "val" in n.meta]
        )
        self.mutated = {
            s.target for s in ep.graph_signature.output_specs if s.kind.name.endswith("MUTATION")
        }
        self.added = 0

    def value(self, node: torch.fx.Node) -> torch.Tensor | None:
        """The data of a parameter, buffer or constant that is never mutated;
        None for user inputs and anything else."""
        spec = self.specs.get(node)
        if spec is None or spec.kind not in _LIFTED or spec.target in self.mutated:
            return None
        data = self.state_dict.get(spec.target)
        if data is None:
            data = self.constants.get(spec.target)
        return data if isinstance(data, torch.Tensor) else None

    def add(self, tensor: torch.Tensor, prefix: str) -> torch.fx.Node:
        """A new ``CONSTANT_TENSOR`` placeholder holding ``tensor``, targeted
        ``<prefix>_<n>`` and named ``c_<prefix>_<n>``."""
        index = self.added
        while f"{prefix}_{index}" in self.constants:
            index += 1
        target = f"{prefix}_{index}"
        self.added = index + 1
        anchor = next(
            n
            for n in self.gm.graph.nodes
            if n.op != "placeholder" or self.specs[n].kind == InputKind.USER_INPUT
        )
        with self.gm.graph.inserting_before(anchor):
            node = self.gm.graph.placeholder(f"c_{target}")
        node.meta["val"] = self.fake_mode.from_tensor(tensor, static_shapes=True)
        self.constants[target] = tensor
        self.specs[node] = InputSpec(
            InputKind.CONSTANT_TENSOR, TensorArgument(node.name), target, None
        )
        return node

    def remove_unused(self) -> None:
        """Drop lifted inputs nothing reads, with their data."""
        for node in list(self.specs):
            if node.users or self.value(node) is None:
                continue
            spec = self.specs.pop(node)
            self.gm.graph.erase_node(node)
            self.state_dict.pop(spec.target, None)
            self.constants.pop(spec.target, None)

    def program(self) -> ExportedProgram:
        """The program with the edited graph, in ``ep``'s class and dialect."""
        self.gm.recompile()
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        return rebuild(
            self.ep,
            self.gm,
            verifier=self.ep.verifiers[0],
            program_class=type(self.ep),
            input_specs=[self.specs[n] for n in placeholders],
            state_dict=self.state_dict,
            constants=self.constants,
        )
