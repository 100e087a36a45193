"""Reads Ember's op list (kernels/ops.yaml) and PyTorch-style operator schemas,
with nothing but the standard library: the build runs this, before any part
of Ember (or torch) exists.

ops.yaml is a list of entries, one per kernel, each a block of `key: value`
lines whose first line starts with `- `:

    - op: aten::add.out
      schema: "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
      file: kernels/portable/op_add_sub.cpp

Values are plain or double-quoted scalars; `#` starts a comment outside quotes.
That is all of YAML the file uses, so it needs no YAML library.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path


class OpListError(ValueError):
    """A malformed op list or schema, with the file and line."""


@dataclass
class Argument:
    type: str  # as written: "Tensor", "Tensor(a!)", "int[2]", "SymInt[]?", ...
    name: str
    default: str | None = None
    kwarg_only: bool = False

    @property
    def is_out(self) -> bool:
        return "!" in self.type


@dataclass
class Schema:
    name: str  # "aten::add"
    overload: str  # "out" ("" for the default overload)
    arguments: list[Argument] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)  # return types

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name


def _split_top(text: str) -> list[str]:
    """Splits on commas outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    tail = text[start:]
    if tail.strip():
        parts.append(tail)
    return [p.strip() for p in parts]


_SCHEMA = re.compile(r"^(?P<name>[\w:]+)(?:\.(?P<overload>\w+))?\((?P<args>.*)\)\s*->\s*(?P<ret>.*)$")


def parse_schema(text: str) -> Schema:
    """Parses a schema as PyTorch prints it (``str(op._schema)``)."""
    m = _SCHEMA.match(text.strip())
    if m is None:
        raise OpListError(f"not an operator schema: {text!r}")
    schema = Schema(m["name"], m["overload"] or "")
    kwarg_only = False
    for part in _split_top(m["args"]):
        if part == "*":
            kwarg_only = True
            continue
        decl, _, default = part.partition("=")
        type_, _, name = decl.strip().rpartition(" ")
        if not type_ or not name:
            raise OpListError(f"argument {part!r} of {text!r} has no type or name")
        schema.arguments.append(Argument(type_, name, default.strip() or None, kwarg_only))
    ret = m["ret"].strip()
    if ret.startswith("(") and ret.endswith(")"):
        ret = ret[1:-1]
    schema.returns = [r.rsplit(" ", 1)[0] if " " in r else r for r in _split_top(ret)]
    return schema


def _scalar(value: str, where: str) -> str:
    value = value.strip()
    if value.startswith('"'):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise OpListError(f"{where}: bad quoted value ({e})") from None
    return value.split(" #", 1)[0].strip()


def read_op_list(path: Path) -> list[dict[str, str]]:
    """The entries of ops.yaml, in order; every entry has `op`."""
    entries: list[dict[str, str]] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{path}:{number}"
        if stripped.startswith("- "):
            entries.append({})
            stripped = stripped[2:]
        elif not entries or not line.startswith("  "):
            raise OpListError(f"{where}: expected '- key: value' or an indented 'key: value'")
        key, sep, value = stripped.partition(":")
        if not sep or not re.fullmatch(r"\w+", key):
            raise OpListError(f"{where}: expected 'key: value', got {stripped!r}")
        if key in entries[-1]:
            raise OpListError(f"{where}: '{key}' given twice in one entry")
        entries[-1][key] = _scalar(value, where)
    seen = set()
    for entry in entries:
        if "op" not in entry:
            raise OpListError(f"{path}: an entry has no 'op': {entry}")
        if entry["op"] in seen:
            raise OpListError(f"{path}: {entry['op']} is listed twice")
        seen.add(entry["op"])
    return entries
