"""Ember's XNNPACK-style quantizer for the pt2e flow (``prepare_pt2e`` /
``convert_pt2e`` from ``torchao.quantization.pt2e``).

It annotates the graph of ``torch.export.export(model, args).module()``:

* conv2d and linear: input activation, weight, int32 bias derived from both
  scales; a single relu user is fused (only the relu's output is quantized);
* add and mul (a single relu user of add is fused the same way);
* max/avg pool, adaptive avg pool, relu, hardtanh/relu6 and cat: their output
  shares the input's quantization parameters (cat: all inputs share the
  first's), so they move int8 values without requantizing;

Any other op is left alone: it stays float between a dequantize and the next
quantize. With a dynamic config only conv2d and linear are annotated (input
and weight), the input's parameters computed at run time by ``choose_qparams``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpecBase,
    Quantizer,
    SharedQuantizationSpec,
)

from ember.quantization.quantization_config import QuantizationConfig

_ANNOTATION_KEY = "quantization_annotation"

aten = torch.ops.aten
_CONV = {aten.conv2d.default}
_LINEAR = {aten.linear.default}
_RELU = {aten.relu.default, aten.relu_.default}
_BINARY = {aten.add.Tensor, aten.add_.Tensor, aten.mul.Tensor, aten.mul_.Tensor}
_FUSES_RELU = {aten.add.Tensor, aten.add_.Tensor}
# Outputs that keep their input's quantization parameters.
_SHARING = {
    aten.max_pool2d.default,
    aten.avg_pool2d.default,
    aten.adaptive_avg_pool2d.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.relu6.default,
    # Zero padding (TF-style models pad before convolutions): the zero point
    # stands for 0 exactly, so the padded tensor keeps its input's parameters
    # and the int8 program pads in int8 (or the convolution pads itself).
    aten.pad.default,
    aten.constant_pad_nd.default,
    *_RELU,
}
_CAT = {aten.cat.default, aten.concat.default}

# The ops this quantizer annotates (for documentation and tests).
SUPPORTED_OPS = frozenset(_CONV | _LINEAR | _BINARY | _SHARING | _CAT)


def _is_float_tensor(node: object) -> bool:
    if not isinstance(node, Node):
        return False
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dtype.is_floating_point


def _is_annotated(node: Node) -> bool:
    ann = node.meta.get(_ANNOTATION_KEY)
    return ann is not None and ann._annotated


def _annotate(
    node: Node,
    inputs: dict[Node, QuantizationSpecBase | None],
    output: QuantizationSpecBase | None,
) -> None:
    node.meta[_ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


def _fusable_relu(node: Node) -> Node | None:
    """The relu that is ``node``'s only user, if not annotated yet."""
    if len(node.users) != 1:
        return None
    (user,) = node.users
    if user.op == "call_function" and user.target in _RELU and not _is_annotated(user):
        return user
    return None


def _derive_bias_qparams(
    observers: Sequence[torch.nn.Module],
) -> tuple[torch.Tensor, torch.Tensor]:
    # The bias is added to the int32 accumulator of input x weight products,
    # whose scale is input scale x weight scale.
    act_scale, _ = observers[0].calculate_qparams()
    weight_scale, _ = observers[1].calculate_qparams()
    scale = (act_scale * weight_scale).to(torch.float32)
    return scale, torch.zeros_like(scale, dtype=torch.int32)


def _bias_spec(
    config: QuantizationConfig, act: Node, weight: Node, node: Node
) -> DerivedQuantizationSpec:
    return DerivedQuantizationSpec(
        derived_from=[(act, node), (weight, node)],
        derive_qparams_fn=_derive_bias_qparams,
        dtype=torch.int32,
        quant_min=-(2**31),
        quant_max=2**31 - 1,
        qscheme=(
            torch.per_channel_symmetric if config.is_per_channel else torch.per_tensor_symmetric
        ),
        ch_axis=0 if config.is_per_channel else None,
    )


def _annotate_weighted(node: Node, config: QuantizationConfig) -> None:
    """conv2d / linear: (input, weight, bias?, ...)."""
    act, weight = node.args[0], node.args[1]
    bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    if not (_is_float_tensor(act) and _is_float_tensor(weight)):
        return
    inputs: dict[Node, QuantizationSpecBase | None] = {
        act: config.input_activation,
        weight: config.weight,
    }
    if config.is_dynamic:
        _annotate(node, inputs, None)  # bias stays float; the output too
        return
    if _is_float_tensor(bias):
        inputs[bias] = _bias_spec(config, act, weight, node)
    relu = _fusable_relu(node)
    if relu is None:
        _annotate(node, inputs, config.output_activation)
    else:
        _annotate(node, inputs, None)
        _annotate(relu, {}, config.output_activation)


def _annotate_binary(node: Node, config: QuantizationConfig) -> None:
    inputs = {a: config.input_activation for a in node.args[:2] if _is_float_tensor(a)}
    if not inputs or not _is_float_tensor(node):
        return
    relu = _fusable_relu(node) if node.target in _FUSES_RELU else None
    if relu is None:
        _annotate(node, inputs, config.output_activation)
    else:
        _annotate(node, inputs, None)
        _annotate(relu, {}, config.output_activation)


def _annotate_sharing(node: Node, config: QuantizationConfig) -> None:
    src = node.args[0]
    if not (_is_float_tensor(src) and _is_float_tensor(node)):
        return
    _annotate(node, {src: config.input_activation}, SharedQuantizationSpec((src, node)))


def _annotate_cat(node: Node, config: QuantizationConfig) -> None:
    tensors = node.args[0]
    if not isinstance(tensors, (list, tuple)) or not tensors:
        return
    if not all(_is_float_tensor(t) for t in tensors):
        return
    first = tensors[0]
    shared = SharedQuantizationSpec((first, node))
    inputs: dict[Node, QuantizationSpecBase | None] = {first: config.input_activation}
    for t in tensors[1:]:
        inputs.setdefault(t, shared)
    _annotate(node, inputs, shared)


# Fused patterns first, so a relu is claimed by its producer before it is
# seen on its own.
_STATIC_ANNOTATORS: list[tuple[set, Callable[[Node, QuantizationConfig], None]]] = [
    (_CONV | _LINEAR, _annotate_weighted),
    (_BINARY, _annotate_binary),
    (_SHARING, _annotate_sharing),
    (_CAT, _annotate_cat),
]
_DYNAMIC_ANNOTATORS = [(_CONV | _LINEAR, _annotate_weighted)]


class XNNPACKQuantizer(Quantizer):
    """``XNNPACKQuantizer().set_global(get_symmetric_quantization_config())``."""

    def __init__(self) -> None:
        super().__init__()
        self.global_config: QuantizationConfig | None = None

    def set_global(self, quantization_config: QuantizationConfig | None) -> XNNPACKQuantizer:
        """Use ``quantization_config`` for every op this quantizer knows; returns self."""
        self.global_config = quantization_config
        return self

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        config = self.global_config
        if config is None:
            return model
        annotators = _DYNAMIC_ANNOTATORS if config.is_dynamic else _STATIC_ANNOTATORS
        for targets, annotate in annotators:
            for node in model.graph.nodes:
                if node.op != "call_function" or node.target not in targets:
                    continue
                if not _is_annotated(node):
                    annotate(node, config)
        return model

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass
