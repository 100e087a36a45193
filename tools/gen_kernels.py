"""Writes the kernel declarations, unboxing wrappers and registration table
from Ember's op list (kernels/ops.yaml).

    python3 tools/gen_kernels.py kernels/ops.yaml OUT_DIR [--ops FILE]

Run by the build (CMake) with nothing but the standard library: it imports
neither torch nor the extension it is part of. It writes

  OUT_DIR/functions/<library>/<stem>.h   for each kernel source file
    (`file:` in the entries, e.g. kernels/portable/op_add.cpp ->
    functions/portable/op_add.h) one typed declaration per kernel it defines:
      namespace ember::kernels::portable {
      void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other,
                   const EValue& alpha, Tensor& out);
      }
    The source file includes its own header, so a change to one entry of the
    op list recompiles that file (and the table), not every kernel;
  OUT_DIR/kernel_functions.h   includes every one of those headers;
  OUT_DIR/register_kernels.cpp  for each kernel a boxed wrapper that unboxes
    `EValue** args` into those typed arguments, and one table of Kernel
    entries (name, wrapper, argument kinds and names, prepare wrapper, dtype
    set and the argument it is about) that a single static object registers.

The wrappers do no checking: load_method checks every argument against the
kinds in the table once, before anything executes (value_matches_kind in
runtime/kernel/kernel_signature.cpp), so `execute` only calls.

An entry with `prepare: true` also declares `<function>_prepare(
KernelPrepareContext&, <same arguments>) -> Error`, which load_method runs
once per instruction (validate, derive geometry, pack constant weights).

With `--ops FILE` (the output of `ember-oplist`: one operator name per line,
`#` comments) only those kernels are declared wrappers and registered, so a
static link with section garbage collection leaves the others out
(selective build). A name in FILE that the op list does not have is an error.

The files are rewritten only when their text changes, so an unchanged op list
rebuilds nothing.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_schema import Argument, OpListError, Schema, parse_schema, read_op_list  # noqa: E402

# Base type (alias annotation and fixed list length removed) -> kind letter;
# the optional form (`T?`) takes the lower-case letter. The letters are
# runtime/kernel/kernel_signature.h's.
_KINDS = {
    "Tensor": "T", "Scalar": "S", "int": "I", "SymInt": "I", "ScalarType": "I",
    "MemoryFormat": "I", "Layout": "I", "float": "D", "bool": "B",
    "int[]": "L", "SymInt[]": "L", "float[]": "F", "bool[]": "Q",
    "Tensor[]": "X", "Tensor?[]": "O", "str": "Y",
}
_OPTIONAL = {"T": "t", "S": "s", "I": "i", "D": "d", "B": "b", "L": "l", "F": "f", "Y": "y"}

# Kind letter -> (C++ parameter type, unboxing expression of `v`, an EValue&).
# Out tensors (alias annotation with `!`) are `Tensor&`; every other tensor is
# `const Tensor&` (its data is still writable through the pointer, but the
# kernel does not resize or re-point it).
_CPP = {
    "T": ("const Tensor&", "*{v}.as_tensor"),
    "t": ("const Tensor*", "{v}.is_none() ? nullptr : {v}.as_tensor"),
    "S": ("const EValue&", "{v}"),
    "s": ("const EValue*", "{v}.is_none() ? nullptr : &{v}"),
    "I": ("int64_t", "unbox_int({v})"),
    "i": ("std::optional<int64_t>", "unbox_optional_int({v})"),
    "D": ("double", "unbox_double({v})"),
    "d": ("std::optional<double>", "unbox_optional_double({v})"),
    "B": ("bool", "unbox_bool({v})"),
    "b": ("std::optional<bool>", "unbox_optional_bool({v})"),
    "L": ("IntSpan", "{v}.as_int_list.get()"),
    "l": ("std::optional<IntSpan>", "unbox_optional_int_list({v})"),
    "F": ("DoubleSpan", "{v}.as_double_list"),
    "f": ("std::optional<DoubleSpan>", "unbox_optional_double_list({v})"),
    "Q": ("BoolSpan", "{v}.as_bool_list"),
    "X": ("TensorList", "{v}.as_tensor_list.get()"),
    "O": ("TensorList", "{v}.as_tensor_list.get()"),
    "Y": ("std::string_view", "{v}.as_string"),
    "y": ("std::optional<std::string_view>", "unbox_optional_string({v})"),
    "*": ("const EValue&", "{v}"),
}

_LIBRARIES = {"portable", "quantized", "prim"}

# ops.yaml dtype names -> ScalarType codes (runtime/core/scalar_type.h).
DTYPE_CODES = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
    "float32": 6, "float64": 7, "bool": 11, "bfloat16": 15,
}


def _base(type_: str) -> tuple[str, bool]:
    """("int[]", optional) for "int[2]?"; alias annotations dropped."""
    t = re.sub(r"\([a-z]+!?\)", "", type_)
    optional = t.endswith("?")
    t = t.removesuffix("?")
    t = re.sub(r"\[\d+\]$", "[]", t)
    return t, optional


def kind(type_: str) -> str:
    base, optional = _base(type_)
    letter = _KINDS.get(base, "*")
    if optional:
        return _OPTIONAL.get(letter, "*")
    return letter


def signature(schema: Schema) -> tuple[str, str]:
    """(kind letters, comma-separated names) for every argument and the
    return slot, as the emitter lays out a kernel call's arguments."""
    kinds = "".join(kind(a.type) for a in schema.arguments)
    names = [a.name for a in schema.arguments]
    returns = schema.returns
    if len(returns) == 1:
        # A scalar result (sym_size, _local_scalar_dense) is written into its value.
        kinds += "T" if _base(returns[0])[0] == "Tensor" else "*"
        names.append("return")
    elif len(returns) > 1:
        kinds += "X"
        names.append("return")
    elif schema.overload.endswith("out"):
        # An out variant returning () (split_with_sizes_copy.out, ...): the
        # emitter still passes its out as the return slot, as for every kernel
        # call. An op that mutates an argument and returns () (the prim
        # et_copy_index) has no return slot.
        outs: list[Argument] = [a for a in schema.arguments if a.is_out]
        if outs:
            kinds += kind(outs[0].type) if len(outs) == 1 else "X"
            names.append("return")
    return kinds, ",".join(names)


@dataclass
class KernelEntry:
    op: str
    schema: Schema
    library: str  # portable | quantized | prim
    function: str  # C++ name inside ember::kernels::<library>
    prepare: bool
    dtypes: list[str] | None = None  # the dtype set of the dtype argument; None: unchecked
    file: str = ""  # the source file that defines it (kernels/<library>/...)

    @property
    def qualified(self) -> str:
        return f"::ember::kernels::{self.library}::{self.function}"


def function_name(op: str) -> str:
    """`aten::add.Scalar_out` -> `add_Scalar_out`; a `.default` overload adds nothing."""
    rest = op.partition("::")[2]
    base, _, overload = rest.partition(".")
    return base if overload in ("", "default") else f"{base}_{overload}"


def library_of(file: str, op: str) -> str:
    parts = Path(file).parts
    if len(parts) < 3 or parts[0] != "kernels" or parts[1] not in _LIBRARIES:
        raise OpListError(f"ops.yaml: {op}: file {file!r} is not under kernels/<{'|'.join(sorted(_LIBRARIES))}>/")
    return parts[1]


def dtype_argument(schema: Schema) -> int | None:
    """The argument a kernel's dtype set is about: its first tensor (or tensor
    list) input, or its first out when it takes none; None without tensors."""
    tensors = [i for i, a in enumerate(schema.arguments)
               if _base(a.type)[0] in ("Tensor", "Tensor[]", "Tensor?[]")]
    inputs = [i for i in tensors if not schema.arguments[i].is_out]
    return (inputs or tensors or [None])[0]


def parse_dtypes(text: str, op: str) -> list[str]:
    """`all` or a comma-separated list of DTYPE_CODES names."""
    if text.strip() == "all":
        return list(DTYPE_CODES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in DTYPE_CODES]
    if unknown or not names:
        raise OpListError(f"ops.yaml: {op}: dtypes must be 'all' or names from "
                          f"{', '.join(DTYPE_CODES)}; got {text!r}")
    return names


def entries_of(op_list: list[dict[str, str]]) -> list[KernelEntry]:
    out: list[KernelEntry] = []
    names: dict[tuple[str, str], str] = {}
    for entry in sorted(op_list, key=lambda e: e["op"]):
        if "schema" not in entry:
            raise OpListError(f"ops.yaml: {entry['op']} has no schema")
        if "file" not in entry:
            raise OpListError(f"ops.yaml: {entry['op']} has no file")
        schema = parse_schema(entry["schema"])
        if schema.full_name != entry["op"] and f"{schema.full_name}.default" != entry["op"]:
            raise OpListError(f"ops.yaml: {entry['op']} has the schema of {schema.full_name}")
        for flag in ("prepare",):
            if entry.get(flag, "false") not in ("true", "false"):
                raise OpListError(f"ops.yaml: {entry['op']}: {flag} must be true or false")
        library = library_of(entry["file"], entry["op"])
        fn = function_name(entry["op"])
        if (library, fn) in names:
            raise OpListError(f"ops.yaml: {entry['op']} and {names[(library, fn)]} both map to "
                              f"ember::kernels::{library}::{fn}")
        names[(library, fn)] = entry["op"]
        dtypes = None
        if "dtypes" in entry:
            if dtype_argument(schema) is None:
                raise OpListError(f"ops.yaml: {entry['op']} takes no tensor, so it has no dtypes")
            dtypes = parse_dtypes(entry["dtypes"], entry["op"])
        out.append(KernelEntry(entry["op"], schema, library, fn, entry.get("prepare") == "true",
                               dtypes, entry["file"]))
    return out


def parameters(entry: KernelEntry) -> list[tuple[str, str]]:
    """(C++ declaration, unboxing expression) per typed parameter, in order;
    the return slot is a parameter only for a scalar result."""
    kinds, _ = signature(entry.schema)
    params = []
    for i, arg in enumerate(entry.schema.arguments):
        cpp, unbox = _CPP[kinds[i]]
        if kinds[i] == "T" and arg.is_out:
            cpp = "Tensor&"
        elif kinds[i] == "t" and arg.is_out:
            cpp = "Tensor*"
        params.append((f"{cpp} {arg.name}", unbox.format(v=f"(*args[{i}])")))
    if len(entry.schema.returns) == 1:
        slot = f"(*args[{len(entry.schema.arguments)}])"
        if _base(entry.schema.returns[0])[0] != "Tensor":
            params.append(("EValue& result", slot))
        elif not any(a.is_out for a in entry.schema.arguments):
            # A functional op (the prim et_view): the return slot is its output.
            params.append(("Tensor& out", f"*{slot}.as_tensor"))
    return params


def declaration(entry: KernelEntry, suffix: str = "", ret: str = "void",
                context: str = "KernelContext") -> str:
    params = ", ".join([f"{context}& ctx"] + [p for p, _ in parameters(entry)])
    return f"{ret} {entry.function}{suffix}({params})"


_PREAMBLE = [
    "// Generated by tools/gen_kernels.py from kernels/ops.yaml. Do not edit: edit the op list.",
]


def header_of(entry: KernelEntry) -> str:
    """Where the declarations of the kernels in entry's source file go,
    relative to OUT_DIR: kernels/portable/op_add.cpp -> functions/portable/op_add.h."""
    return f"functions/{entry.library}/{Path(entry.file).stem}.h"


def render_file_header(entries: list[KernelEntry]) -> str:
    """The typed declarations of the kernels one source file defines."""
    lines = _PREAMBLE + [
        f"// The kernels {entries[0].file} defines, one typed declaration each.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <optional>",
        "#include <string_view>",
        "",
        '#include "runtime/kernel/kernel_args.h"',
        '#include "runtime/kernel/kernel_context.h"',
        "",
        f"namespace ember::kernels::{entries[0].library} {{",
    ]
    for e in entries:
        lines.append(f"// {e.schema.full_name}")
        lines.append(declaration(e) + ";")
        if e.prepare:
            lines.append(declaration(e, "_prepare", "Error", "KernelPrepareContext") + ";")
    lines.append(f"}}  // namespace ember::kernels::{entries[0].library}")
    lines.append("")
    return "\n".join(lines)


def by_header(entries: list[KernelEntry]) -> dict[str, list[KernelEntry]]:
    groups: dict[str, list[KernelEntry]] = {}
    for e in entries:
        groups.setdefault(header_of(e), []).append(e)
    return dict(sorted(groups.items()))


def render_header(entries: list[KernelEntry]) -> str:
    lines = _PREAMBLE + [
        "// Every kernel's typed declaration: the per-source-file headers, all of them.",
        "#pragma once",
        "",
    ]
    lines += [f'#include "kernels/generated/{h}"' for h in by_header(entries)]
    lines.append("")
    return "\n".join(lines)


def render_source(entries: list[KernelEntry]) -> str:
    wrappers, rows = [], []
    for e in entries:
        kinds, names = signature(e.schema)
        params = parameters(e)
        call_args = ", ".join(["ctx"] + [u for _, u in params])
        stem = f"{e.library}_{e.function}"
        wrappers.append(f"void {stem}_boxed(KernelContext& ctx, EValue** args) {{\n"
                        f"  {e.qualified}({call_args});\n}}")
        prepare = "nullptr"
        if e.prepare:
            wrappers.append(f"Error {stem}_prepare_boxed(KernelPrepareContext& ctx, EValue** args) {{\n"
                            f"  return {e.qualified}_prepare({call_args});\n}}")
            prepare = f"{stem}_prepare_boxed"
        mask, arg = 0, -1
        if e.dtypes is not None:
            mask = sum(1 << DTYPE_CODES[n] for n in e.dtypes)
            arg = dtype_argument(e.schema)
        rows.append(f'    {{"{e.op}", {stem}_boxed, "{kinds}", "{names}", {prepare}, -1, '
                    f'0x{mask:04x}, {arg}}},')
    return (
        "// Generated by tools/gen_kernels.py from kernels/ops.yaml. Do not edit: edit the op list.\n"
        "// Unboxing wrappers (no checks: load_method checked the argument kinds) and\n"
        "// the table that registers them.\n"
        '#include "kernels/generated/kernel_functions.h"\n'
        '#include "runtime/kernel/kernel_registry.h"\n\n'
        "namespace ember::kernels {\nnamespace {\n\n"
        + "\n\n".join(wrappers) + "\n\n"
        "constexpr Kernel kKernels[] = {\n" + "\n".join(rows) + "\n};\n\n"
        "const KernelTableRegistration kRegistration(kKernels, std::size(kKernels));\n\n"
        "}  // namespace\n}  // namespace ember::kernels\n"
    )


def read_selection(path: Path) -> set[str]:
    ops = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ops.add(line)
    return ops


def select(entries: list[KernelEntry], ops: set[str], where: str) -> list[KernelEntry]:
    known = {e.op for e in entries}
    unknown = sorted(ops - known)
    if unknown:
        raise OpListError(f"{where}: not in kernels/ops.yaml: {', '.join(unknown)}")
    return [e for e in entries if e.op in ops]


def write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def main(argv: list[str]) -> int:
    args = list(argv)
    selection = None
    if "--ops" in args:
        i = args.index("--ops")
        if i + 1 >= len(args):
            print("--ops needs a file", file=sys.stderr)
            return 2
        selection = Path(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    op_list, out_dir = Path(args[0]), Path(args[1])
    try:
        entries = entries_of(read_op_list(op_list))
        # Declarations cover every kernel (the sources compile either way);
        # the table only the selected ones.
        registered = entries
        if selection is not None:
            registered = select(entries, read_selection(selection), str(selection))
    except OpListError as e:
        print(f"gen_kernels: {e}", file=sys.stderr)
        return 1
    for header, group in by_header(entries).items():
        write_if_changed(out_dir / header, render_file_header(group))
    write_if_changed(out_dir / "kernel_functions.h", render_header(entries))
    write_if_changed(out_dir / "register_kernels.cpp", render_source(registered))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
