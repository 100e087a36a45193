"""A readable listing of an emitted program (``dump_executorch_program``).

Works on the Program the emitter produced (``EmittedProgram.program``, the
FlatBuffers JSON before the C++ writer adds segments): per method its
inputs, outputs, instructions (operator, arguments with their values) and
delegates, then the planned memory.
"""

from __future__ import annotations

import json
from typing import Any, TextIO


def _tensor(v: dict[str, Any]) -> str:
    sizes = ", ".join(str(s) for s in v["sizes"])
    dtype = v["scalar_type"].lower()
    where = []
    if v.get("data_buffer_idx", 0) > 0:
        where.append(f"constant #{v['data_buffer_idx']}")
    info = v.get("allocation_info")
    if info:
        offset = info["memory_offset_low"] | (info["memory_offset_high"] << 32)
        where.append(f"planned @ buffer {info['memory_id']} + {offset}")
    if v.get("shape_dynamism", "STATIC") != "STATIC":
        where.append("sizes are upper bounds")
    if v.get("dim_order") != sorted(v.get("dim_order", [])):
        where.append(f"dim order {v['dim_order']}")
    return f"{dtype}[{sizes}]" + (f" ({'; '.join(where)})" if where else "")


def describe_value(values: list[dict[str, Any]], i: int) -> str:
    """One value of the table, readable: ``Tensor float32[2, 3] (planned @ ...)``."""
    if i < 0:
        return "None"
    kind, v = values[i]["val_type"], values[i]["val"]
    if kind == "Tensor":
        return "Tensor " + _tensor(v)
    if kind in ("Int", "Bool", "Double", "String"):
        return f"{kind} {next(iter(v.values()))}"
    if kind == "Null":
        return "None"
    if kind in ("IntList", "TensorList", "OptionalTensorList"):
        return f"{kind} [{', '.join('%' + str(x) if x >= 0 else 'None' for x in v['items'])}]"
    if kind in ("DoubleList", "BoolList"):
        return f"{kind} {v['items']}"
    return f"{kind} {json.dumps(v)}"


def print_program(program: dict[str, Any], out: TextIO, verbose: bool) -> None:
    """Non-verbose: the Program's tables as indented JSON (the FlatBuffer's
    content). Verbose: per method, each instruction with its operator and
    every argument described."""
    if not verbose:
        out.write(json.dumps(program, indent=2) + "\n")
        return
    for plan in program["execution_plan"]:
        values = plan["values"]
        operators = plan["operators"]
        out.write(f"Method '{plan['name']}'\n")
        for label in ("inputs", "outputs"):
            out.write(f"  {label}:\n")
            for i in plan[label]:
                out.write(f"    %{i}: {describe_value(values, i)}\n")
        out.write("  instructions:\n")
        n = 0
        for chain in plan["chains"]:
            for ins in chain["instructions"]:
                kind, a = ins["instr_args_type"], ins["instr_args"]
                if kind == "KernelCall":
                    op = operators[a["op_index"]]
                    what = f"{op['name']}.{op['overload']}" if op["overload"] else op["name"]
                elif kind == "DelegateCall":
                    d = plan["delegates"][a["delegate_index"]]
                    what = f"delegate #{a['delegate_index']} ({d['id']})"
                else:
                    out.write(f"    [{n}] {kind} {json.dumps(a)}\n")
                    n += 1
                    continue
                out.write(f"    [{n}] {what}\n")
                for i in a["args"]:
                    out.write(f"          %{i}: {describe_value(values, i)}\n")
                n += 1
        for i, d in enumerate(plan.get("delegates", [])):
            specs = ", ".join(
                f"{s['key']}={bytes(s['value']).decode(errors='replace')}"
                for s in d.get("compile_specs", [])
            )
            out.write(f"  delegate #{i}: {d['id']}" + (f" [{specs}]" if specs else "") + "\n")
        sizes = plan.get("non_const_buffer_sizes", [])
        planned = ", ".join(f"buffer {i}: {s} bytes" for i, s in enumerate(sizes) if i > 0)
        out.write(f"  planned memory: {planned or 'none'}\n")
