"""ExecuTorch's module path of the XNNPACK quantizer
(``...xnnpack.quantizer.xnnpack_quantizer``)."""
