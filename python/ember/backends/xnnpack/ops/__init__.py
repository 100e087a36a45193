"""Every op the delegate runs, one module per family; importing the package
fills ``registry.REGISTRY`` (op name -> check and lowering)."""

from ember.backends.xnnpack.ops import (  # noqa: F401
    convolution,
    data_movement,
    elementwise,
    linear,
    pooling,
    softmax,
)
