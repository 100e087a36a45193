"""Configuration of ``to_edge`` and ``to_executorch``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch._ops import OpOverload

from ember.exir.passes.memory_planning import MemoryPlanningPass
from ember.exir.passes.sym_shape_eval_pass import ConstraintBasedSymShapeEvalPass


@dataclass
class EdgeCompileConfig:
    """``_check_ir_validity``: run the edge verifier (core ATen opset).
    ``_core_aten_ops_exception_list``: non-core ATen ops to allow anyway.
    ``preserve_ops``: ops ``to_edge`` keeps whole instead of decomposing
    them (the edge verifier allows them); each needs a kernel or a backend
    that claims it. Mutating and aliasing ops are refused.
    ``_skip_dim_order``: write memory-format/dtype copies as
    ``aten::_to_copy.out`` / ``aten::clone.out`` instead of the dim-order ops
    (overrides ``ExecutorchBackendConfig.dim_order_ops``).
    ``_use_edge_ops``, ``_skip_type_promotion``: accepted with ExecuTorch's
    defaults only (``docs/executorch-api.md``).
    ``fuse_attention`` (Ember's own): decompose each
    ``scaled_dot_product_attention`` the kernel takes into one
    ``ember_fused::sdpa`` (tiles, no score matrix;
    ``ember.exir.passes.fuse_attention``) rather than its math form; False
    keeps the aten ops, which other runtimes of the format also run."""

    _check_ir_validity: bool = True
    _core_aten_ops_exception_list: list[OpOverload] = field(default_factory=list)
    preserve_ops: list[OpOverload] = field(default_factory=list)
    _skip_dim_order: bool = False
    _use_edge_ops: bool = True
    _skip_type_promotion: bool = False
    fuse_attention: bool = True

    def __post_init__(self) -> None:
        if not self._use_edge_ops:
            raise NotImplementedError(
                "EdgeCompileConfig(_use_edge_ops=False): Ember's edge dialect always uses edge "
                "ops (ember.exir.dialects._ops.ops.edge)"
            )
        if self._skip_type_promotion:
            raise NotImplementedError(
                "EdgeCompileConfig(_skip_type_promotion=True): Ember keeps PyTorch's type "
                "promotion in the edge dialect"
            )
        for op in self.preserve_ops:
            if not isinstance(op, OpOverload):
                raise TypeError(
                    f"preserve_ops takes OpOverloads (torch.ops.aten.x.default), got {op!r}"
                )
            schema = op._schema
            if schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
                raise ValueError(
                    f"preserve_ops: {op} mutates or aliases its inputs; only functional ops "
                    "can be kept in the edge dialect"
                )


@dataclass
class ExecutorchBackendConfig:
    """``passes``: edge-dialect passes run before the out-variant conversion
    (``ExportPass`` instances or callables GraphModule -> PassResult); their
    result must still use edge ops (the core-opset check is not applied).
    ``memory_planning_pass``: places the non-constant tensors.
    ``constant_folding``: compute what depends only on parameters and
    constants at export (``ember.exir.passes.ConstantFoldPass``).
    ``fold_batch_norm``: fold inference batch norm into the convolution it
    follows (``ember.exir.passes.fold_batch_norm``: one kernel instead of
    two, the new weight and bias computed at export).
    ``fold_padding``: fold a symmetric zero ``constant_pad_nd`` into the
    convolution that reads it (``ember.exir.passes.fold_padding``: TF-style
    models pad before every convolution).
    ``fuse_quantized_ops``: rewrite pt2e's dequantize → linear/convolution
    → quantize chains into ``ember_quantized`` ops that compute in integers
    (``ember.exir.passes.fuse_quantized_ops``, ``docs/quantization.md``);
    False keeps the ``quantized_decomposed`` chains, which runtimes without
    Ember's kernels also run.
    ``fuse_conv_activation``: rewrite a float convolution followed by a
    residual add and/or relu/hardtanh/clamp into one
    ``ember_fused::fused_convolution`` whose kernel does both on each output tile
    (``ember.exir.passes.fuse_conv_activation``); False keeps the aten ops,
    which runtimes without Ember's kernels also run.
    ``fuse_gelu_tanh``: rewrite the tanh GELU written out in elementwise ops
    (GPT-2's ``gelu_new``: pow, tanh, three mul, two add) into
    ``aten.gelu(approximate="tanh")`` (``ember.exir.passes.fuse_gelu_tanh``;
    a core ATen op, so the program still runs on other runtimes).
    ``fuse_linear_activation``: rewrite a float linear layer (``addmm``/``mm``)
    followed by a residual add and/or GELU/relu/hardtanh/clamp into one
    ``ember_fused::fused_linear`` whose kernel does them on each output tile
    (``ember.exir.passes.fuse_linear_activation``); False keeps the aten
    ops, which runtimes without Ember's kernels also run. Not applied with
    ``precision="bf16"``.
    ``fuse_safe_softmax``: rewrite the seven ops that attention's
    ``_safe_softmax`` decomposes into (softmax, then zeros for rows that are
    all -inf) into one ``ember_fused::safe_softmax``
    (``ember.exir.passes.fuse_safe_softmax``); False keeps the aten ops.
    ``fuse_rms_norm``: rewrite the RMS norm transformers' decoders write out
    (pow, mean, add, rsqrt, mul, mul) into one ``ember_fused::rms_norm``
    (``ember.exir.passes.fuse_rms_norm``); False keeps the aten ops.
    ``fuse_rope``: rewrite the rotary position embedding transformers' Llama
    family writes out (two slices, neg, cat, two mul, add per tensor) into
    one ``ember_fused::rope`` (``ember.exir.passes.fuse_rope``; eager's bits);
    False keeps the aten ops.
    ``max_pool_without_indices``: a 2-D max pool whose int64 indices nothing
    reads runs as ``ember_fused::max_pool2d``, which does not write them
    (``ember.exir.passes.max_pool_without_indices``); False keeps the aten op.
    ``remove_redundant_clones``: drop a contiguous ``clone`` of a value the
    graph computed that is already contiguous and fresh (``.contiguous()``
    after a permute, which exports as ``permute_copy`` then ``clone``), when
    neither is a graph output (``ember.exir.passes.remove_redundant_clones``);
    False keeps every clone.
    ``nchw16c_layout``: run float32 2-D convolutions (one group, channels in
    whole blocks of 16, a constant weight) on the channel-blocked layout
    NCHW16c, converting only where a chain of them starts and ends
    (``ember.exir.passes.nchw16c_layout``, ``docs/nchw16c.md``; not with
    ``precision="bf16"``); False keeps the NCHW convolutions. Such a program
    runs only on runtimes with Ember's kernels.
    ``precision``: ``"fp32"`` (the default) computes in float32 as the model
    does; ``"bf16"`` runs every float32 linear layer and GEMM convolution
    with a constant weight in bf16 (``ember.exir.passes.bf16_precision``;
    3×3 stride-1 convolutions on planes of 28×28 or more keep float32
    Winograd): the weight is stored as
    bfloat16, activations are rounded to bfloat16 and products are summed in
    float32, with AVX512-BF16 where the CPU has it (``docs/bf16.md``: speed
    and error). Such a program runs only on runtimes with Ember's kernels.
    ``dim_order_ops``: write memory-format/dtype copies as
    ``dim_order_ops::_to_dim_order_copy.out`` / ``_clone_dim_order.out``, as
    other exporters of the format do (False: ``aten::_to_copy.out`` /
    ``aten::clone.out``, which Ember's earlier runtimes also run).

    ExecuTorch's fields (``docs/executorch-api.md`` says what each does here):
    ``memory_planning_pass`` and ``sym_shape_eval_pass`` may be dicts from
    method name to pass; ``extract_delegate_segments`` (False: delegate
    blobs inline in the FlatBuffer), ``segment_alignment``,
    ``constant_tensor_alignment`` and ``delegate_alignment`` go to the C++
    writer; ``remove_view_copy`` (True): a ``view_copy`` whose input is read
    for the last time by it gets its input's memory, so its copy does
    nothing (``passes/memory_planning.py``; False: every view in memory of
    its own).
    ``emit_stacktrace`` (default True, unlike ExecuTorch): each instruction
    carries its node's name and the model's innermost source frames in
    ``Chain.stacktrace``, which runtime errors and ``ember-run --profile`` name;
    False leaves them out (a smaller file).
    ``external_constants``: True keeps every constant tensor out of the
    ``.pte``, in the named-data file ``_default_external_constant.ptd``; a
    callable (graph placeholder node -> file name without ``.ptd``, or None
    to keep that constant in the ``.pte``) chooses per tensor.
    ``ExecutorchProgramManager.write_tensor_data_to_file(dir)`` writes the
    files; the runtime takes them beside the program (``ember-run --data``).
    Delegates keep the weights they own in their blobs."""

    passes: Sequence[Callable[..., Any]] = field(default_factory=list)
    memory_planning_pass: MemoryPlanningPass | dict[str, MemoryPlanningPass] = field(
        default_factory=MemoryPlanningPass
    )
    constant_folding: bool = True
    fold_batch_norm: bool = True
    fold_padding: bool = True
    fuse_quantized_ops: bool = True
    fuse_conv_activation: bool = True
    fuse_gelu_tanh: bool = True
    fuse_linear_activation: bool = True
    fuse_safe_softmax: bool = True
    fuse_rms_norm: bool = True
    fuse_rope: bool = True
    max_pool_without_indices: bool = True
    remove_redundant_clones: bool = True
    nchw16c_layout: bool = True
    precision: str = "fp32"
    dim_order_ops: bool = True
    extract_delegate_segments: bool = True
    segment_alignment: int = 128
    constant_tensor_alignment: int | None = None
    delegate_alignment: int | None = None
    sym_shape_eval_pass: Any = field(default_factory=ConstraintBasedSymShapeEvalPass)
    remove_view_copy: bool = True
    emit_stacktrace: bool = True
    external_constants: bool | Callable[[Any], str | None] = False

    def __post_init__(self) -> None:
        if self.precision not in ("fp32", "bf16"):
            raise ValueError(
                f"ExecutorchBackendConfig(precision={self.precision!r}): expected 'fp32' or 'bf16'"
            )
        for name in ("segment_alignment", "constant_tensor_alignment", "delegate_alignment"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v <= 0 or v & (v - 1)):
                raise ValueError(f"ExecutorchBackendConfig({name}={v!r}): must be a power of two")
        if self.delegate_alignment is not None and (
            self.delegate_alignment > self.segment_alignment
            or not self.extract_delegate_segments
        ):
            raise NotImplementedError(
                f"ExecutorchBackendConfig(delegate_alignment={self.delegate_alignment}): Ember "
                "aligns delegate data to segment_alignment "
                f"({self.segment_alignment}) in segments; a larger alignment, or an alignment "
                "of inline delegate data (extract_delegate_segments=False), is not supported"
            )
        if not isinstance(self.external_constants, bool) and not callable(self.external_constants):
            raise TypeError(
                "ExecutorchBackendConfig(external_constants=...): True, False or a callable "
                f"(node -> .ptd file name or None), got {type(self.external_constants).__name__}"
            )
        passes = (
            self.sym_shape_eval_pass.values()
            if isinstance(self.sym_shape_eval_pass, dict)
            else [self.sym_shape_eval_pass]
        )
        for p in passes:
            if not isinstance(p, ConstraintBasedSymShapeEvalPass):
                raise TypeError(
                    "sym_shape_eval_pass: Ember plans symbolic sizes for their constraint "
                    "bounds; pass ConstraintBasedSymShapeEvalPass() or HintBasedSymShapeEvalPass() "
                    f"(ember.exir.passes.sym_shape_eval_pass), got {type(p).__name__}"
                )

    def memory_planning_pass_for(self, method: str) -> MemoryPlanningPass:
        """The memory planning pass of ``method`` (a dict may name one per method)."""
        if isinstance(self.memory_planning_pass, dict):
            return self.memory_planning_pass.get(method) or MemoryPlanningPass()
        return self.memory_planning_pass

    def writer_options(self) -> dict[str, int]:
        """Keyword arguments of ``ember._C.write_program``."""
        return {
            "segment_alignment": self.segment_alignment,
            "constant_alignment": self.constant_tensor_alignment or 16,
            # 0: every delegate blob goes into a segment; all ones: every blob stays inline.
            "max_inline_delegate_bytes": 0 if self.extract_delegate_segments else 2**64 - 1,
        }
