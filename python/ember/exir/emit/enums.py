"""c10 enum numbers for dtypes, memory formats and layouts."""

from __future__ import annotations

import torch

# ScalarType names as in schema/program.fbs, numbered like c10::ScalarType.
SCALAR_TYPES: dict[torch.dtype, tuple[str, int]] = {
    torch.uint8: ("UINT8", 0),
    torch.int8: ("INT8", 1),
    torch.int16: ("INT16", 2),
    torch.int32: ("INT32", 3),
    torch.int64: ("INT64", 4),
    torch.float16: ("FLOAT16", 5),
    torch.float32: ("FLOAT32", 6),
    torch.float64: ("FLOAT64", 7),
    torch.bool: ("BOOL", 11),
    torch.qint8: ("QINT8", 12),
    torch.quint8: ("QUINT8", 13),
    torch.qint32: ("QINT32", 14),
    torch.bfloat16: ("BFLOAT16", 15),
    torch.quint4x2: ("QUINT4X2", 16),
    torch.quint2x4: ("QUINT2X4", 17),
    torch.bits16: ("BITS16", 22),
    torch.float8_e5m2: ("FLOAT8E5M2", 23),
    torch.float8_e4m3fn: ("FLOAT8E4M3FN", 24),
    torch.float8_e5m2fnuz: ("FLOAT8E5M2FNUZ", 25),
    torch.float8_e4m3fnuz: ("FLOAT8E4M3FNUZ", 26),
    torch.uint16: ("UINT16", 27),
    torch.uint32: ("UINT32", 28),
    torch.uint64: ("UINT64", 29),
}

MEMORY_FORMATS: dict[torch.memory_format, int] = {
    torch.contiguous_format: 0,
    torch.preserve_format: 1,
    torch.channels_last: 2,
    torch.channels_last_3d: 3,
}

LAYOUTS: dict[torch.layout, int] = {torch.strided: 0, torch.sparse_coo: 1, torch.sparse_csr: 2}


def scalar_type_name(dtype: torch.dtype) -> str:
    if dtype not in SCALAR_TYPES:
        raise NotImplementedError(f"dtype {dtype} has no .pte ScalarType")
    return SCALAR_TYPES[dtype][0]


def enum_number(value: torch.dtype | torch.memory_format | torch.layout) -> int:
    """The c10 number of a dtype, memory format or layout argument."""
    if isinstance(value, torch.dtype):
        return SCALAR_TYPES[value][1]
    if isinstance(value, torch.memory_format):
        return MEMORY_FORMATS[value]
    return LAYOUTS[value]
