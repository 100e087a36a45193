"""``from ember.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer,
get_symmetric_quantization_config``, the import path ExecuTorch's docs use (the names live in
``ember.quantization``; importing them also defines the ``quantized_decomposed`` out variants)."""

from ember.quantization import (
    QuantizationConfig,
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)

__all__ = ["QuantizationConfig", "XNNPACKQuantizer", "get_symmetric_quantization_config"]
