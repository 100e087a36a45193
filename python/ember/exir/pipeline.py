"""The order of the AOT passes, top to bottom, in one place.

to_edge:        linalg error checks dropped -> core-ATen decompositions (SDPA into
                ember_fused::sdpa where its kernel takes the call, passes/fuse_attention.py;
                none of EdgeCompileConfig.preserve_ops, nor of the ops a partitioner's
                ops_to_not_decompose names in to_edge_transform_and_lower) ->
                PyTorch's decompositions of the
                non-core ops left -> drop assertion ops -> scalars to
                tensors -> view ops to *_copy -> edge op namespace -> verify
transform:      user passes -> verify
to_edge_transform_and_lower: to_edge -> transform -> to_backend per partitioner; if
                ops kept for a partitioner are left unclaimed, the method is lowered
                again with them decomposed (edge_program_manager.py)
to_executorch:  user passes -> bounds check (dynamic shapes) -> ``executorch_passes``
                (each ExportedProgram -> ExportedProgram): zero padding and batch
                norm folded into convolutions -> fused convolution/linear epilogues
                (residual add, activation) -> constant folding -> out variants +
                alloc (upper-bound shapes) -> dim-order ops -> loop-carried values
                in memory of their own -> subgraph operands linked -> mutated
                buffers and inputs written back (in place or by a final copy) ->
                memory planning (its result on the nodes: ``node.meta["spec"]``)
                (then ``ember.exir.emit`` writes the program, and the input
                guards beside it: ``passes/input_guards.py``)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch._ops import OpOverload
from torch.export import ExportedProgram
from torch.utils import _pytree as pytree

from ember.exir.config import EdgeCompileConfig, ExecutorchBackendConfig
from ember.exir.control_flow import (
    carry_in_own_memory,
    for_each_branch,
    link_operands,
    unroll_maps,
)
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.passes.bf16_precision import Bf16PrecisionPass
from ember.exir.passes.constant_fold import ConstantFoldPass
from ember.exir.passes.decompose_non_core import decompose_non_core
from ember.exir.passes.dim_order_ops_pass import to_dim_order_ops
from ember.exir.passes.edge_ops_pass import EdgeOpsPass
from ember.exir.passes.ember_decompositions import EMBER_CIA_DECOMPOSITIONS
from ember.exir.passes.fold_batch_norm import FoldBatchNormPass
from ember.exir.passes.fold_padding import FoldPaddingPass
from ember.exir.passes.fuse_conv_activation import FuseConvActivationPass
from ember.exir.passes.fuse_attention import SDPA, fused_sdpa_decomposition
from ember.exir.passes.fuse_gelu_tanh import FuseGeluTanhPass
from ember.exir.passes.fuse_rms_norm import FuseRmsNormPass
from ember.exir.passes.fuse_rope import FuseRopePass
from ember.exir.passes.fuse_linear_activation import FuseLinearActivationPass
from ember.exir.passes.fuse_safe_softmax import FuseSafeSoftmaxPass
from ember.exir.passes.max_pool_without_indices import MaxPoolWithoutIndicesPass
from ember.exir.passes.nchw16c_layout import Nchw16cLayoutPass
from ember.exir.passes.sdpa_causal_mask import SdpaCausalMaskPass
from ember.exir.passes.fuse_dynamic_intx_linear import FuseDynamicIntxLinearPass
from ember.exir.passes.fuse_quantized_ops import FuseQuantizedOpsPass
from ember.exir.passes.fuse_weight_only_linear import FuseWeightOnlyLinearPass
from ember.exir.passes.linalg_error_checks import drop_linalg_error_checks
from ember.exir.passes.memory_planning import MemoryPlan
from ember.exir.passes.mutable_buffers import write_back_mutated_buffers
from ember.exir.passes.out_variant_pass import to_out_variants
from ember.exir.passes.remove_asserts import remove_asserts
from ember.exir.passes.remove_redundant_clones import RemoveRedundantClonesPass
from ember.exir.passes.scalar_to_tensor import scalars_to_tensors, scalars_to_tensors_in_branch
from ember.exir.passes.view_copy_pass import ViewCopyPass
from ember.exir.symbolic import SymbolBounds
from ember.exir.verification.edge_verifier import EdgeDialectVerifier, verify_edge_ops
from ember.exir.verification.out_variant_program import (
    OutVariantDialectVerifier,
    OutVariantExportedProgram,
)

GraphPass = Callable[[torch.fx.GraphModule], Any]


def run_graph_passes(gm: torch.fx.GraphModule, passes: Iterable[GraphPass]) -> torch.fx.GraphModule:
    """Run passes returning a PassResult (or None when they work in place)."""
    for p in passes:
        result = p(gm)
        if result is not None:
            gm = result.graph_module
    return gm


def to_edge_program(
    ep: ExportedProgram, config: EdgeCompileConfig, preserve: Iterable[OpOverload] = ()
) -> ExportedProgram:
    """``preserve``: ops kept whole besides ``config.preserve_ops`` (those a
    partitioner asks for, ``to_edge_transform_and_lower``)."""
    kept = set(config.preserve_ops) | set(preserve)
    table = torch.export.default_decompositions()
    table.update(EMBER_CIA_DECOMPOSITIONS)
    for op in kept:
        table.pop(op, None)
    if config.fuse_attention and SDPA not in kept and SDPA in table:
        table[SDPA] = fused_sdpa_decomposition(table[SDPA])
    ep = drop_linalg_error_checks(ep.run_decompositions(table))
    unroll_maps(ep.graph_module)
    ep = decompose_non_core(ep, list(config._core_aten_ops_exception_list) + list(kept), kept)
    remove_asserts(ep.graph_module)
    ep = scalars_to_tensors(ep)
    gm = run_graph_passes(ep.graph_module, [ViewCopyPass(), EdgeOpsPass()])
    # Branches of control flow get the same rewrites.
    for_each_branch(gm, _edge_branch)
    return checked_edge_program(ep, gm, config, kept)


def _edge_branch(branch: torch.fx.GraphModule) -> torch.fx.GraphModule:
    remove_asserts(branch)
    scalars_to_tensors_in_branch(branch)
    return run_graph_passes(branch, [ViewCopyPass(), EdgeOpsPass()])


def checked_edge_program(
    ep: ExportedProgram,
    gm: torch.fx.GraphModule,
    config: EdgeCompileConfig,
    preserved: Iterable[OpOverload] = (),
) -> ExportedProgram:
    edge = rebuild(ep, gm, verifier=EdgeDialectVerifier)
    if config._check_ir_validity:
        exceptions: list[OpOverload] = list(config._core_aten_ops_exception_list)
        exceptions += list(config.preserve_ops) + list(preserved)
        verify_edge_ops(edge.graph_module, exceptions)
    return edge


def transform_edge_program(
    ep: ExportedProgram,
    passes: Iterable[GraphPass],
    config: EdgeCompileConfig,
    preserved: Iterable[OpOverload] = (),
) -> ExportedProgram:
    gm = run_graph_passes(copy_graph_module(ep.graph_module), passes)
    return checked_edge_program(ep, gm, config, preserved)


ProgramPass = Callable[[ExportedProgram], ExportedProgram]


def on_every_graph(rewrite: Callable[[torch.fx.GraphModule], Any]) -> ProgramPass:
    """A ProgramPass from an in-place rewrite of a graph module, run on the
    program's graph and on every subgraph of its control flow."""

    def run(ep: ExportedProgram) -> ExportedProgram:
        rewrite(ep.graph_module)
        for_each_branch(ep.graph_module, rewrite)
        return ep

    return run


def on_graph(rewrite: Callable[[torch.fx.GraphModule], Any]) -> ProgramPass:
    """A ProgramPass from an in-place rewrite of the program's graph (which
    walks its control flow itself, if it needs to)."""

    def run(ep: ExportedProgram) -> ExportedProgram:
        rewrite(ep.graph_module)
        return ep

    return run


def write_back_pass(ep: ExportedProgram) -> ExportedProgram:
    """Mutated buffers and inputs get their new values (passes/mutable_buffers.py);
    what was done is kept on the graph for the memory plan's report."""
    ep.graph_module.meta["write_backs"] = write_back_mutated_buffers(ep)
    return ep


def executorch_passes(
    config: ExecutorchBackendConfig, bounds: SymbolBounds, dim_order_ops: bool = True
) -> list[tuple[str, ProgramPass]]:
    """The passes of ``to_executorch`` after the user's, in order; each takes
    and returns an ExportedProgram."""
    passes: list[tuple[str, ProgramPass]] = []
    if config.fold_padding:
        passes.append(("fold zero padding into convolutions", FoldPaddingPass()))
    if config.fold_batch_norm:
        passes.append(("fold batch norm into convolutions", FoldBatchNormPass()))
    if config.fuse_quantized_ops:
        passes.append(("fuse quantized ops", FuseQuantizedOpsPass()))
        passes.append(("fuse 8da4w/8da8w linear", FuseDynamicIntxLinearPass()))
        passes.append(("fuse weight-only quantized linear", FuseWeightOnlyLinearPass()))
    if config.fuse_conv_activation:
        passes.append(("fuse convolution + residual + activation", FuseConvActivationPass()))
    if config.fuse_gelu_tanh:
        passes.append(("tanh GELU written out into gelu(approximate='tanh')",
                       FuseGeluTanhPass()))
    if config.fuse_linear_activation:
        passes.append(("fuse linear + residual + activation", FuseLinearActivationPass()))
    if config.fuse_safe_softmax:
        passes.append(("fuse safe softmax", FuseSafeSoftmaxPass()))
    if config.fuse_rms_norm:
        passes.append(("fuse RMS norm", FuseRmsNormPass()))
    if config.fuse_rope:
        passes.append(("fuse rotary position embedding", FuseRopePass()))
    if config.max_pool_without_indices:
        passes.append(("max pooling without unread indices", MaxPoolWithoutIndicesPass()))
    if config.precision == "bf16":
        passes.append(("linear layers and convolutions in bf16", Bf16PrecisionPass()))
    elif config.nchw16c_layout:
        passes.append(("convolutions on the NCHW16c layout", Nchw16cLayoutPass()))
    if config.constant_folding:
        passes.append(("fold constants", ConstantFoldPass()))
        passes.append(("attention with a constant causal mask as causal", SdpaCausalMaskPass()))
    if config.remove_redundant_clones:
        passes.append(("contiguous clones of fresh contiguous values", RemoveRedundantClonesPass()))
    passes.append(("out variants", on_every_graph(lambda g: to_out_variants(g, bounds.shape))))
    if config.dim_order_ops and dim_order_ops:
        passes.append(("dim-order ops", on_every_graph(to_dim_order_ops)))
    passes.append(("loop-carried values in own memory", on_graph(carry_in_own_memory)))
    passes.append(("link subgraph operands", on_graph(link_operands)))
    passes.append(("write back mutated buffers and inputs", write_back_pass))
    return passes


def to_out_variant_program(
    ep: ExportedProgram, config: ExecutorchBackendConfig, method: str, dim_order_ops: bool = True
) -> tuple[ExportedProgram, MemoryPlan]:
    unsupported = [f"{s.kind.name} {s.target}" for s in ep.graph_signature.output_specs
                   if s.kind.name not in ("USER_OUTPUT", "BUFFER_MUTATION", "USER_INPUT_MUTATION")]
    if unsupported:
        raise NotImplementedError(
            f"method '{method}': outputs of kind {', '.join(unsupported)} are not supported"
        )
    gm = run_graph_passes(copy_graph_module(ep.graph_module), config.passes)
    ep = rebuild(ep, gm, verifier=EdgeDialectVerifier)  # user passes keep edge ops
    bounds = SymbolBounds(ep, method)
    _check_bounded_shapes(gm, bounds)
    for _, program_pass in executorch_passes(config, bounds, dim_order_ops):
        ep = program_pass(ep)
    program = rebuild(
        ep, ep.graph_module, verifier=OutVariantDialectVerifier,
        program_class=OutVariantExportedProgram,
    )
    # remove_view_copy: a view may take its input's memory (memory_planning.py).
    program.graph_module.meta["remove_view_copy"] = config.remove_view_copy
    return program, config.memory_planning_pass_for(method).plan(program, method)


def _check_bounded_shapes(gm: torch.fx.GraphModule, bounds: SymbolBounds) -> None:
    """Every tensor size needs a finite upper bound (raises UnboundedShapeError)."""
    for node in gm.graph.nodes:
        for val in pytree.tree_leaves(node.meta.get("val")):
            if isinstance(val, torch.Tensor):
                what = f"input '{node.name}'" if node.op == "placeholder" else node.name
                bounds.shape(val, what)
