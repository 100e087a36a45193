"""The C++ runner ember-llm on a tiny exported Llama and a SentencePiece
model trained in the test: its greedy tokens equal eager generate's; seeded
sampling repeats; tokenizer.json, bad files and long prompts are refused
with messages that say why."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

from llm_testing import eager_greedy, llama_program, sentencepiece_model

PROMPT = "the cat sat on the mat"


def _ember_llm() -> str:
    path = os.path.join(os.path.dirname(sys.executable), "ember-llm")
    if not os.path.exists(path):
        path = shutil.which("ember-llm") or ""
    if not path:
        pytest.skip("ember-llm is not built (libsentencepiece-dev missing)")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("llm")
    model, et = llama_program()
    et.save(d / "model.pte")
    (d / "tokenizer.model").write_bytes(sentencepiece_model())
    return model, d


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([_ember_llm(), *args], check=False, capture_output=True, text=True,
                         timeout=60)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def _new_tokens(stderr: str) -> list[int]:
    return [int(t) for t in re.search(r"new tokens:(.*)", stderr).group(1).split()]


def test_greedy_tokens_equal_eager_generate(files) -> None:
    model, d = files
    out = _run(str(d / "model.pte"), "--tokenizer", str(d / "tokenizer.model"), "--prompt", PROMPT,
               "--max-new-tokens", "32", "--print-tokens", "--threads", "1")
    sp = spm.SentencePieceProcessor(model_file=str(d / "tokenizer.model"))
    ids = [1] + sp.encode(PROMPT)
    prompt = [int(t) for t in re.search(r"prompt tokens:(.*)", out.stderr).group(1).split()]
    assert prompt == ids
    want = eager_greedy(model, ids, 32)
    assert _new_tokens(out.stderr) == want
    # The prompt is echoed, then the new text streams after it.
    assert sp.decode(ids) == PROMPT
    assert out.stdout == sp.decode(ids + want) + "\n"
    stats = re.search(r"prompt (\d+) tokens, (\d+) new \(max-new-tokens\); time to first token "
                      r"([\d.]+) ms; prefill ([\d.]+) tok/s; decode ([\d.]+) tok/s; threads 1",
                      out.stderr)
    assert stats, out.stderr
    assert int(stats.group(1)) == len(ids) and int(stats.group(2)) == 32
    assert float(stats.group(4)) > 0 and float(stats.group(5)) > 0


def test_seeded_sampling_repeats(files) -> None:
    _, d = files
    args = [str(d / "model.pte"), "--tokenizer", str(d / "tokenizer.model"), "--prompt", PROMPT,
            "--max-new-tokens", "16", "--print-tokens", "--temperature", "0.8", "--top-p", "0.9"]
    a = _new_tokens(_run(*args, "--seed", "5").stderr)
    b = _new_tokens(_run(*args, "--seed", "5").stderr)
    greedy = _new_tokens(_run(*args[:-4]).stderr)
    assert a == b and len(a) == 16 and a != greedy[:16]


def test_refusals(files, tmp_path) -> None:
    _, d = files
    pte, tok = str(d / "model.pte"), str(d / "tokenizer.model")
    js = tmp_path / "tokenizer.json"
    js.write_text("{}")
    out = _run(pte, "--tokenizer", str(js), "--prompt", "x", check=False)
    assert out.returncode == 1 and "HF tokenizer.json" in out.stderr and "ember.llm.generate" in out.stderr
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"\x00garbage" * 10)
    out = _run(pte, "--tokenizer", str(bad), "--prompt", "x", check=False)
    assert out.returncode == 1 and "not a valid SentencePiece model" in out.stderr
    out = _run(pte, "--tokenizer", tok, "--prompt", "the cat " * 40, check=False)
    assert out.returncode == 1 and "KV cache holds 48 positions" in out.stderr
    out = _run(pte, "--tokenizer", tok, check=False)
    assert out.returncode == 2 and "usage" in out.stderr
    not_llm = tmp_path / "plain.pte"
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "programs", "m.pte"),
                not_llm)
    out = _run(str(not_llm), "--tokenizer", tok, "--prompt", "x", check=False)
    assert out.returncode == 1 and "not a program from ember.llm.export" in out.stderr
