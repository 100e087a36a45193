"""kernels/ops.yaml, the op list the build generates kernel signatures from,
lists exactly the registered kernels, with PyTorch's current schemas, and the
build's reader and schema parser handle it (and refuse malformed lists)."""

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

from gen_kernel_signatures import render, signature  # noqa: E402
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


def test_files_register_their_kernels():
    for entry in read_op_list(OP_LIST):
        source = (ROOT / entry["file"]).read_text()
        assert re.search(r'EMBER_REGISTER_KERNEL\w*\(\s*"' + re.escape(entry["op"]) + '"', source), entry


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


def test_every_entry_with_a_schema_gets_a_signature():
    text = render(read_op_list(OP_LIST))
    with_schema = [e for e in read_op_list(OP_LIST) if "schema" in e]
    assert text.count('    {"') == len(with_schema)
    assert '{"quantized_decomposed::quantize_per_tensor.out", "TDIIIITT",' in text


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
