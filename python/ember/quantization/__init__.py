"""Post-training int8 quantization in the pt2e flow, for Ember's runtime.

    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from ember.quantization import XNNPACKQuantizer, get_symmetric_quantization_config

    graph = torch.export.export(model, example_args).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(graph, quantizer)
    for x in calibration_batches:
        prepared(x)
    converted = convert_pt2e(prepared)
    program = ember.exir.to_edge(torch.export.export(converted, example_args)).to_executorch()

``prepare_pt2e`` and ``convert_pt2e`` (torchao's) are re-exported for convenience.
Importing this package also defines the ``quantized_decomposed`` out variants
that ``to_executorch`` needs (see ``ember.exir.operator.quantized_decomposed``).
"""

from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import ember.exir.operator.quantized_decomposed  # noqa: F401
from ember.quantization.quantization_config import (
    QuantizationConfig,
    get_symmetric_quantization_config,
)
from ember.quantization.xnnpack_quantizer import SUPPORTED_OPS, XNNPACKQuantizer

__all__ = [
    "SUPPORTED_OPS",
    "QuantizationConfig",
    "XNNPACKQuantizer",
    "convert_pt2e",
    "get_symmetric_quantization_config",
    "prepare_pt2e",
]
