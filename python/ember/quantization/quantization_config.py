"""Quantization configs: which observers and int8 ranges the quantizer asks for.

The XNNPACK scheme: activations asymmetric int8 [-128, 127] per tensor,
observed during calibration (or computed at run time when dynamic); weights
symmetric int8 [-127, 127] per tensor or per output channel; bias int32 with
scale = input scale x weight scale and zero point 0 (derived by the quantizer
from the two observers, so it needs no observer of its own).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torchao.quantization.pt2e import (
    HistogramObserver,
    MinMaxObserver,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
)
from torchao.quantization.pt2e.quantizer import QuantizationSpec

# Smallest scale an observer may pick: keeps 1/scale finite for (near-)constant tensors.
ACTIVATION_EPS = 2**-12
WEIGHT_EPS = 2**-12


@dataclass(frozen=True)
class QuantizationConfig:
    """How one annotated op is quantized. ``output_activation`` is None for
    dynamic configs: their outputs stay float."""

    input_activation: QuantizationSpec
    output_activation: QuantizationSpec | None
    weight: QuantizationSpec
    is_per_channel: bool
    is_dynamic: bool


def get_symmetric_quantization_config(
    is_per_channel: bool = False, is_dynamic: bool = False
) -> QuantizationConfig:
    """The XNNPACK int8 config: symmetric weights (per output channel when
    ``is_per_channel``), asymmetric activations from calibration observers, or
    from ``choose_qparams`` at run time when ``is_dynamic``."""
    if is_dynamic:
        activation = QuantizationSpec(
            dtype=torch.int8,
            quant_min=-128,
            quant_max=127,
            qscheme=torch.per_tensor_affine,
            is_dynamic=True,
            observer_or_fake_quant_ctr=PlaceholderObserver.with_args(eps=ACTIVATION_EPS),
        )
    else:
        activation = QuantizationSpec(
            dtype=torch.int8,
            quant_min=-128,
            quant_max=127,
            qscheme=torch.per_tensor_affine,
            observer_or_fake_quant_ctr=HistogramObserver.with_args(eps=ACTIVATION_EPS),
        )
    if is_per_channel:
        weight = QuantizationSpec(
            dtype=torch.int8,
            quant_min=-127,
            quant_max=127,
            qscheme=torch.per_channel_symmetric,
            ch_axis=0,
            observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=WEIGHT_EPS),
        )
    else:
        weight = QuantizationSpec(
            dtype=torch.int8,
            quant_min=-127,
            quant_max=127,
            qscheme=torch.per_tensor_symmetric,
            observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=WEIGHT_EPS),
        )
    return QuantizationConfig(
        input_activation=activation,
        output_activation=None if is_dynamic else activation,
        weight=weight,
        is_per_channel=is_per_channel,
        is_dynamic=is_dynamic,
    )
