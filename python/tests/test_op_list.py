"""kernels/ops.yaml, the op list the build generates the typed kernel
declarations, unboxing wrappers and registration from, lists exactly the
registered kernels, with PyTorch's current schemas; each source file defines
its typed kernels; the build's reader, schema parser and generator handle it
(and refuse malformed lists)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gen_kernels import (  # noqa: E402
    DTYPE_CODES, declaration, dtype_argument, entries_of, function_name, main as gen_main,
    parse_dtypes, render_source, signature)
from kernel_schema import OpListError, parse_schema, read_op_list  # noqa: E402

OP_LIST = ROOT / "kernels/ops.yaml"


def torch_schema(name: str) -> str | None:
    import ember.exir.operator.dim_order_ops  # noqa: F401  (not defined by PyTorch)
    import ember.exir.operator.quantized_decomposed  # noqa: F401  (Ember's out overloads)

    namespace, _, rest = name.partition("::")
    packet_name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), packet_name)
        return str(getattr(packet, overload or "default")._schema)
    except (AttributeError, RuntimeError):
        return None


def entry_text(name: str) -> str:
    schema = torch_schema(name)
    lines = [f"- op: {name}"] + ([f"  schema: {json.dumps(schema)}"] if schema else [])
    return "\n".join(lines)


def test_op_list_is_the_registered_kernels():
    listed = {e["op"] for e in read_op_list(OP_LIST)}
    registered = set(_C.registered_kernels())
    missing = sorted(registered - listed)
    assert not missing, "add to kernels/ops.yaml:\n" + "\n".join(entry_text(n) for n in missing)
    assert not listed - registered, f"listed but not registered: {sorted(listed - registered)}"


def test_schemas_are_pytorchs():
    for entry in read_op_list(OP_LIST):
        want = torch_schema(entry["op"])
        if want is None:
            assert "schema" not in entry or entry["op"].startswith("executorch_prim::"), entry
            continue
        assert entry.get("schema") == want, f"{entry['op']}: schema is now {want!r}"


def test_files_define_their_kernels():
    files = {e["op"]: e["file"] for e in read_op_list(OP_LIST)}
    for entry in entries_of(read_op_list(OP_LIST)):
        text = (ROOT / files[entry.op]).read_text()
        registered = re.search(r'EMBER_REGISTER_KERNEL\w*\(\s*"' + re.escape(entry.op) + '"', text)
        assert not registered, f"{entry.op}: typed kernels are registered by the generated table"
        # Defined by its name, or by a macro that pastes `<op>_out` from the op's name.
        assert (re.search(r"\b" + re.escape(entry.function) + r"\(", text)
                or re.search(r"\(" + re.escape(entry.function.removesuffix("_out")) + r"[,)]", text)), \
            f"{entry.op}: {files[entry.op]} does not define {entry.library}::{entry.function}"


def test_function_names_follow_the_op():
    assert function_name("aten::add.out") == "add_out"
    assert function_name("aten::add.Scalar_out") == "add_Scalar_out"
    assert function_name("executorch_prim::et_view.default") == "et_view"
    assert function_name("aten::_assert_scalar") == "_assert_scalar"


def test_typed_declarations_and_wrappers():
    entries = {e.op: e for e in entries_of(read_op_list(OP_LIST))}
    add = entries["aten::add.out"]
    assert declaration(add) == ("void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, "
                                "const EValue& alpha, Tensor& out)")
    size = entries["aten::sym_size.int"]
    assert declaration(size).endswith("const Tensor& self, int64_t dim, EValue& result)")
    view = entries["executorch_prim::et_view.default"]
    assert declaration(view).endswith("const Tensor& self, IntSpan size, Tensor& out)")
    text = render_source([add])
    assert "::ember::kernels::portable::add_out(ctx, *(*args[0]).as_tensor, *(*args[1]).as_tensor, (*args[2]), *(*args[3]).as_tensor);" in text
    # ... -1 (no hand-written count), the dtype set (all ten: 0x88ff) and its argument (self).
    assert ('{"aten::add.out", portable_add_out_boxed, "TTSTT", "self,other,alpha,out,return", '
            'nullptr, -1, 0x88ff, 0},') in text


def test_dtype_sets_become_masks_on_their_argument():
    entries = {e.op: e for e in entries_of(read_op_list(OP_LIST))}
    gelu = render_source([entries["aten::gelu.out"]])
    assert gelu.count(", -1, 0x80e0, 0},") == 1  # float16 5, float32 6, float64 7, bfloat16 15
    full = render_source([entries["aten::full.out"]])
    assert ", -1, 0x88ff, 2}," in full  # no tensor input: the set is about the out (arg 2)
    copy_index = render_source([entries["executorch_prim::et_copy_index.tensor"]])
    assert ", 0x88ff, 1}," in copy_index  # copy_to is the out: copy_from is the input
    assert dtype_argument(parse_schema("aten::_assert_scalar(Scalar self, str assert_msg) -> ()")) is None
    assert parse_dtypes("all", "op") == list(DTYPE_CODES)


@pytest.mark.parametrize("dtypes,message", [
    ("float32, complex64", "dtypes must be 'all' or names from"),
    ("", "dtypes must be 'all' or names from"),
])
def test_bad_dtype_sets_are_refused(tmp_path, dtypes, message):
    path = tmp_path / "ops.yaml"
    path.write_text('- op: aten::relu.out\n'
                    '  schema: "aten::relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"\n'
                    '  file: kernels/portable/op_relu.cpp\n'
                    f'  dtypes: {dtypes}\n')
    with pytest.raises(OpListError, match=message):
        entries_of(read_op_list(path))


def test_a_kernel_without_tensors_has_no_dtype_set(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text('- op: executorch_prim::add.Scalar\n'
                    '  schema: "executorch_prim::add.Scalar(Scalar a, Scalar b) -> Scalar"\n'
                    '  file: kernels/prim/scalar_ops.cpp\n'
                    '  dtypes: all\n')
    with pytest.raises(OpListError, match="takes no tensor, so it has no dtypes"):
        entries_of(read_op_list(path))


def test_selective_op_list(tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("# model.pte\naten::add.out\naten::relu.out\n")
    assert gen_main([str(OP_LIST), str(tmp_path / "gen"), "--ops", str(ops)]) == 0
    table = (tmp_path / "gen/register_kernels.cpp").read_text()
    assert table.count('    {"') == 2 and '"aten::relu.out"' in table
    # Every kernel stays declared: the sources compile the same either way.
    gen = tmp_path / "gen"
    assert "void sin_out(" in (gen / "functions/portable/op_sin.h").read_text()
    assert '#include "kernels/generated/functions/portable/op_sin.h"' in \
        (gen / "kernel_functions.h").read_text()
    ops.write_text("aten::no_such_op.out\n")
    assert gen_main([str(OP_LIST), str(tmp_path / "gen"), "--ops", str(ops)]) == 1


def test_parser_reads_pytorch_schemas():
    s = parse_schema(str(torch.ops.aten.max_pool2d_with_indices.out._schema))
    assert s.full_name == "aten::max_pool2d_with_indices.out"
    assert [a.name for a in s.arguments][-2:] == ["out", "indices"]
    assert [a.is_out for a in s.arguments][-3:] == [False, True, True]
    assert s.arguments[1].type == "int[2]" and s.arguments[2].default == "[]"
    assert signature(parse_schema(str(torch.ops.aten.add.out._schema))) == (
        "TTSTT", "self,other,alpha,out,return")
    assert signature(parse_schema(str(torch.ops.aten.split_with_sizes_copy.out._schema)))[0] == "TLIXX"
    gelu = parse_schema(str(torch.ops.aten.gelu.out._schema))
    assert gelu.arguments[1].default == '"none"' and signature(gelu)[0] == "TYTT"


def test_every_entry_gets_a_table_row():
    entries = entries_of(read_op_list(OP_LIST))
    text = render_source(entries)
    assert text.count('    {"') == len(read_op_list(OP_LIST))
    assert '{"quantized_decomposed::quantize_per_tensor.out", ' in text
    assert '"TDIIIITT"' in text


@pytest.mark.parametrize("content,message", [
    ("op: aten::add.out\n", "expected '- key: value'"),
    ("- op: aten::add.out\n  op: aten::sub.out\n", "given twice"),
    ("- op: aten::add.out\n- op: aten::add.out\n", "listed twice"),
    ("- file: x.cpp\n", "has no 'op'"),
    ('- op: a\n  schema: "unterminated\n', "bad quoted value"),
    ("- op: a\n  schema no colon\n", "expected 'key: value'"),
])
def test_malformed_op_lists_are_refused_with_the_line(tmp_path, content, message):
    path = tmp_path / "ops.yaml"
    path.write_text(content)
    with pytest.raises(OpListError, match=message):
        read_op_list(path)


def test_malformed_schema_is_refused():
    with pytest.raises(OpListError, match="not an operator schema"):
        parse_schema("aten::add.out Tensor self")
