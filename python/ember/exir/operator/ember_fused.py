"""Ember's fused float ops (``ember_fused::``), with their out variants.

``ember.exir.passes.fuse_conv_activation`` rewrites a convolution followed by
a residual add and/or an activation into one of these, so the runtime's kernel
(``kernels/portable/op_fused_convolution.cpp``) adds the residual and clamps
each output tile while it is still in cache, instead of running two more ops
that each read and write the whole activation. The eager implementations here
are the reference: they compute what the unfused ops compute, in the same
order, so a program with fused ops means exactly what the one without meant.

- ``fused_convolution(input, weight, bias?, stride, padding, dilation, groups,
  residual?, min?, max?) -> Tensor``: ``y = convolution(input, weight, bias)``
  (not transposed), then ``y = y + residual`` when there is a residual (the
  output's shape and dtype), then ``y = clamp(y, min, max)`` with either bound
  optional (relu is ``min=0``, relu6 and hardtanh are both bounds). With a
  bfloat16 ``weight`` and a float32 ``input`` (the bf16 precision) the input
  is rounded to bfloat16 and the products summed in float32.
- ``to_nchw16c(self) -> Tensor`` and ``from_nchw16c(self, channels) ->
  Tensor``: the channel-blocked layout NCHW16c, float32 ``[N, C, H, W]`` as
  ``[N, ⌈C/16⌉, H, W, 16]`` (channel ``c`` of a position at block ``c // 16``,
  lane ``c % 16``; lanes past ``C`` zero), and back to a contiguous
  ``[N, channels, H, W]``. ``ember.exir.passes.nchw16c_layout`` writes them
  where a chain of blocked convolutions starts and ends
  (``kernels/portable/op_nchw16c_layout.cpp``).
- ``conv2d_nchw16c(input, weight, bias?, stride, padding, residual?, min?,
  max?) -> Tensor``: ``fused_convolution`` (2-D, one group, dilation 1) on
  blocked tensors: input ``[N, ⌈Cin/16⌉, H, W, 16]`` (or a plain
  ``[N, Cin ≤ 16, H, W]``: a stem's three channels), the model's
  ``[Cout, Cin, KH, KW]`` weight, residual and output
  ``[N, ⌈Cout/16⌉, OH, OW, 16]``. Its kernel
  (``kernels/portable/op_conv2d_nchw16c.cpp``) reads the input in place
  and stores each position's 16 channels as one vector (``docs/nchw16c.md``).
- ``max_pool2d_nchw16c(self, kernel_size, stride, padding, ceil_mode) ->
  Tensor``: ``max_pool2d`` (dilation 1, no indices) of a blocked tensor, block
  by block (``kernels/portable/op_max_pool2d_nchw16c.cpp``): ResNet's first
  pool between its blocked stem and blocks.
- ``fused_linear(input, mat2, bias?, residual?, activation="none", min?,
  max?) -> Tensor``: float32 ``y = input @ mat2`` (input ``[M, K]``, mat2
  ``[K, N]``: a linear layer's weight transposed, as ``addmm`` takes it),
  then ``+ bias`` (``[N]``), then ``+ residual`` (``[M, N]``), then
  ``clamp(y, min, max)``, then the activation: ``"none"``, ``"gelu"``
  (erf) or ``"gelu_tanh"`` (``gelu(approximate="tanh")``).
  ``ember.exir.passes.fuse_linear_activation`` writes it for a linear layer
  followed by a residual add and/or relu/hardtanh/clamp/GELU; its kernel
  (``kernels/portable/op_fused_linear.cpp``) does them on each output tile
  of the GEMM.
- ``linear_bf16(input, weight, bias?) -> Tensor``: a linear layer in the
  opt-in bf16 precision (``ExecutorchBackendConfig(precision="bf16")``,
  ``ember.exir.passes.bf16_precision``): ``input`` (float32) is rounded to
  bfloat16, multiplied by ``weight`` (bfloat16 ``[out, in]``) with float32
  sums, and the float32 ``bias`` is added; the output is float32. The kernel
  (``kernels/portable/op_linear_bf16.cpp``) runs AMX or AVX512-BF16 where
  the CPU has them.
- ``fused_linear_bf16(input, weight, bias?, residual?, activation="none",
  min?, max?) -> Tensor``: ``linear_bf16`` with ``fused_linear``'s epilogue
  in float32 (residual, clamp, activation), what the bf16 pass makes of a
  ``fused_linear``; the same kernel file.
- ``safe_softmax(self, dim) -> Tensor``: ``aten._safe_softmax`` (float32):
  softmax over ``dim``, zeros for a slice whose values are all -inf. SDPA's
  math form (what ``to_edge`` makes of ``scaled_dot_product_attention``)
  computes it as softmax followed by eq, logical_not, any, logical_not,
  full_like and where; ``ember.exir.passes.fuse_safe_softmax`` puts the one
  op back (``kernels/portable/op_safe_softmax.cpp``).
- ``rms_norm(input, weight?, eps) -> Tensor``: float32 RMS normalisation
  over the last dim, as transformers' ``LlamaRMSNorm`` (and Qwen2/3's,
  Mistral's, Phi-3's, Gemma's) writes it: ``y = input · rsqrt(mean(input²,
  -1, keepdim) + eps)``, then ``y · weight`` (``[D]``) when there is a
  weight. ``ember.exir.passes.fuse_rms_norm`` writes it for those six ops
  (pow, mean, add, rsqrt, mul, mul); the kernel
  (``kernels/portable/op_rms_norm.cpp``) reads each row once for the sum of
  squares and once to scale it.
- ``rope(x, cos, sin) -> Tensor``: float32 rotary position embedding in the
  half-split form of transformers' Llama family: ``x·cos +
  rotate_half(x)·sin`` with ``rotate_half(x) = cat(−x[..., h:], x[..., :h])``
  (x's last dim 2h; cos and sin of one shape, broadcast to x's).
  ``ember.exir.passes.fuse_rope`` writes it for the seven ops that exports
  as (two slices, neg, cat, two mul, add); the kernel
  (``kernels/portable/op_rope.cpp``) rounds each product and the sum as they
  do, so it has their bits.
- ``max_pool2d(self, kernel_size, stride=[], padding=0, dilation=1,
  ceil_mode=False) -> Tensor``: the values of ``max_pool2d_with_indices``
  without its int64 indices, where nothing reads them
  (``ember.exir.passes.max_pool_without_indices``); any real dtype (int8 for
  the quantized programs' pools).
- ``sdpa(query, key, value, attn_mask?, is_causal=False, scale?) -> Tensor``:
  ``scaled_dot_product_attention`` without dropout, float32, query
  ``[B, H, Lq, D]`` and key/value ``[B, Hkv, Lk, D]`` (``H % Hkv == 0``:
  grouped-query attention), the output contiguous. ``to_edge`` writes it
  for SDPA calls the kernel takes (``ember.exir.passes.fuse_attention``)
  instead of the math decomposition (permute, expand, two bmm, mask add,
  safe softmax); the kernel (``kernels/portable/op_sdpa.cpp``) computes it
  in tiles, without the score matrix.
"""

from __future__ import annotations

import torch

from ember.exir.operator.library import define_ops

_CONVOLUTION = (
    "Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
    "int groups, Tensor? residual, float? min, float? max"
)
_OUT = "*, Tensor(a!) out) -> Tensor(a!)"
_POOL = ("Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
         "int[2] dilation=1, bool ceil_mode=False")

_LINEAR = ('Tensor input, Tensor mat2, Tensor? bias, Tensor? residual, str activation="none", '
           "float? min=None, float? max=None")

_LINEAR_BF16 = ('Tensor input, Tensor weight, Tensor? bias, Tensor? residual, '
                'str activation="none", float? min=None, float? max=None')

_SDPA = ("Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, bool is_causal=False, "
         "float? scale=None")

_POOL_NCHW16C = "Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode"

_CONV2D_NCHW16C = ("Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, "
                   "Tensor? residual, float? min, float? max")

SCHEMAS = {
    "fused_convolution": f"({_CONVOLUTION}) -> Tensor",
    "fused_convolution.out": f"({_CONVOLUTION}, {_OUT}",
    "conv2d_nchw16c": f"({_CONV2D_NCHW16C}) -> Tensor",
    "conv2d_nchw16c.out": f"({_CONV2D_NCHW16C}, {_OUT}",
    "to_nchw16c": "(Tensor self) -> Tensor",
    "to_nchw16c.out": f"(Tensor self, {_OUT}",
    "from_nchw16c": "(Tensor self, int channels) -> Tensor",
    "from_nchw16c.out": f"(Tensor self, int channels, {_OUT}",
    "max_pool2d_nchw16c": f"({_POOL_NCHW16C}) -> Tensor",
    "max_pool2d_nchw16c.out": f"({_POOL_NCHW16C}, {_OUT}",
    "fused_linear": f"({_LINEAR}) -> Tensor",
    "fused_linear.out": f"({_LINEAR}, {_OUT}",
    "linear_bf16": "(Tensor input, Tensor weight, Tensor? bias) -> Tensor",
    "linear_bf16.out": f"(Tensor input, Tensor weight, Tensor? bias, {_OUT}",
    "fused_linear_bf16": f"({_LINEAR_BF16}) -> Tensor",
    "fused_linear_bf16.out": f"({_LINEAR_BF16}, {_OUT}",
    "rms_norm": "(Tensor input, Tensor? weight, float eps) -> Tensor",
    "rms_norm.out": f"(Tensor input, Tensor? weight, float eps, {_OUT}",
    "rope": "(Tensor x, Tensor cos, Tensor sin) -> Tensor",
    "rope.out": f"(Tensor x, Tensor cos, Tensor sin, {_OUT}",
    "safe_softmax": "(Tensor self, int dim) -> Tensor",
    "max_pool2d": f"({_POOL}) -> Tensor",
    "max_pool2d.out": f"({_POOL}, {_OUT}",
    "safe_softmax.out": f"(Tensor self, int dim, {_OUT}",
    "sdpa": f"({_SDPA}) -> Tensor",
    "sdpa.out": f"({_SDPA}, {_OUT}",
}


def fused_convolution(input, weight, bias, stride, padding, dilation, groups, residual, min, max):
    if weight.dtype == torch.bfloat16 and input.dtype == torch.float32:
        # The bf16 precision: the input rounds to bf16 too; float32 sums.
        input, weight = input.to(torch.bfloat16).to(torch.float32), weight.to(torch.float32)
    y = torch.ops.aten.convolution.default(input, weight, bias, stride, padding, dilation, False,
                                           [0] * len(stride), groups)
    if residual is not None:
        y = y + residual
    if min is not None or max is not None:
        y = torch.clamp(y, min, max)
    return y


NCHW16C_BLOCK = 16


def to_nchw16c(self):
    n, c, h, w = self.shape
    blocks = -(-c // NCHW16C_BLOCK)
    x = self
    if blocks * NCHW16C_BLOCK > c:  # (cat rather than pad: pad guards symbolic sizes)
        x = torch.cat([x, x.new_zeros(n, blocks * NCHW16C_BLOCK - c, h, w)], 1)
    return x.reshape(n, blocks, NCHW16C_BLOCK, h, w).permute(0, 1, 3, 4, 2).contiguous()


def from_nchw16c(self, channels):
    n, blocks, h, w, _ = self.shape
    x = self.permute(0, 1, 4, 2, 3).reshape(n, blocks * NCHW16C_BLOCK, h, w)
    return x[:, :channels].contiguous()


def conv2d_nchw16c(input, weight, bias, stride, padding, residual, min, max):
    # A 4-D input is plain NCHW (a stem's few channels), a 5-D one blocked.
    x = input if input.dim() == 4 else from_nchw16c(input, weight.shape[1])
    r = None if residual is None else from_nchw16c(residual, weight.shape[0])
    y = fused_convolution(x, weight, bias, stride, padding, [1, 1], 1, r, min, max)
    return to_nchw16c(y)


def max_pool2d_nchw16c(self, kernel_size, stride, padding, ceil_mode):
    x = from_nchw16c(self, self.shape[1] * NCHW16C_BLOCK)
    return to_nchw16c(max_pool2d(x, kernel_size, stride, padding, [1, 1], ceil_mode))


_ACTIVATIONS = {
    "none": lambda y: y,
    "gelu": lambda y: torch.nn.functional.gelu(y),
    "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
}


def fused_linear(input, mat2, bias, residual, activation="none", min=None, max=None):
    if activation not in _ACTIVATIONS:
        raise ValueError(f"fused_linear: activation must be one of {sorted(_ACTIVATIONS)}, "
                         f"got {activation!r}")
    y = input @ mat2
    if bias is not None:
        y = y + bias
    if residual is not None:
        y = y + residual
    if min is not None or max is not None:
        y = torch.clamp(y, min, max)
    return _ACTIVATIONS[activation](y)


def linear_bf16(input, weight, bias):
    # Products of two bf16 values are exact in float32: only the sums round.
    y = torch.nn.functional.linear(input.to(torch.bfloat16).to(torch.float32),
                                   weight.to(torch.float32))
    return y if bias is None else y + bias


def fused_linear_bf16(input, weight, bias, residual, activation="none", min=None, max=None):
    if activation not in _ACTIVATIONS:
        raise ValueError(f"fused_linear_bf16: activation must be one of "
                         f"{sorted(_ACTIVATIONS)}, got {activation!r}")
    y = linear_bf16(input, weight, bias)
    if residual is not None:
        y = y + residual
    if min is not None or max is not None:
        y = torch.clamp(y, min, max)
    return _ACTIVATIONS[activation](y)


def rms_norm(input, weight, eps):
    y = input * torch.rsqrt(input.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * sin


def safe_softmax(self, dim):
    return torch.ops.aten._safe_softmax.default(self, dim)


def max_pool2d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    # Integers through float64: exact up to 2**53 (every int8 to int32 value).
    x = self if self.is_floating_point() else self.to(torch.float64)
    y = torch.ops.aten.max_pool2d_with_indices.default(x, kernel_size, stride, padding, dilation,
                                                       ceil_mode)[0]
    return y.to(self.dtype)


def sdpa(query, key, value, attn_mask=None, is_causal=False, scale=None):
    y = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
        enable_gqa=query.shape[1] != key.shape[1])
    return y.contiguous()


_FUNCTIONS = {"fused_convolution": fused_convolution, "fused_linear": fused_linear,
              "conv2d_nchw16c": conv2d_nchw16c, "to_nchw16c": to_nchw16c,
              "from_nchw16c": from_nchw16c, "max_pool2d_nchw16c": max_pool2d_nchw16c,
              "fused_linear_bf16": fused_linear_bf16,
              "linear_bf16": linear_bf16, "rms_norm": rms_norm, "rope": rope,
              "safe_softmax": safe_softmax, "max_pool2d": max_pool2d, "sdpa": sdpa}


define_ops("ember_fused", SCHEMAS, _FUNCTIONS)


def _sdpa_fake(query, key, value, attn_mask=None, is_causal=False, scale=None):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


try:
    # SDPA's own implementation needs concrete sizes: the shape rule for
    # symbolic ones (dynamic sequence lengths).
    torch.library.register_fake("ember_fused::sdpa", _sdpa_fake)
except RuntimeError:
    pass  # Registered already (the module imported again).

ops = torch.ops.ember_fused
