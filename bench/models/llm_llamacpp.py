"""llama.cpp (`llama-cpp-python`) on a GGUF file, measured the way the LLM
benchmark measures ember-llm: one process per run, the prompt's token ids
prefilled in one call, then greedy decoding one token per call; time to
first token (prefill + the first argmax), prefill tokens/s, decode tokens/s
(the new tokens after the first over the time from the first to the last),
peak RSS of the process (VmHWM: ru_maxrss would count the memory of the
parent it was forked from).

    python bench/models/llm_llamacpp.py model.gguf --prompt-ids 1,5,9 --new-tokens 128 --threads 1

Threads: llama.cpp's `n_threads` (decode) and `n_threads_batch` (prefill)
are both set to `--threads`. The KV cache is llama.cpp's default (F16) and
its other settings are the library's defaults (weight repacking on, flash
attention as the library decides): what a user of llama-cpp-python gets.
Before timing, one token is evaluated and the cache cleared, so the mapped
file's pages are resident as Ember's loaded weights are (ember-llm reads
and packs its weights at load, before its clock starts).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from peers import peak_rss  # bench/models, beside this file


def available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def load(gguf: Path | str, n_ctx: int, threads: int, n_batch: int = 512, logits_all: bool = False,
         **kwargs):
    """llama_cpp.Llama with both thread counts set; `kwargs` go to it (e.g. type_k/type_v)."""
    import llama_cpp

    return llama_cpp.Llama(model_path=str(gguf), n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                           n_threads=threads, n_threads_batch=threads, logits_all=logits_all,
                           verbose=False, **kwargs)


def last_logits(llm):
    """The logits of the last evaluated position, read through llama.cpp's C API
    (llama-cpp-python 0.3.36 leaves `scores` zero unless logits_all=True)."""
    import llama_cpp
    import numpy as np

    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                 shape=(llm.n_vocab(),))


def greedy(llm, prompt_ids: list[int], new_tokens: int) -> tuple[list[int], dict]:
    """Prefill `prompt_ids` in one call, then `new_tokens` greedy tokens; the tokens and timings."""
    import numpy as np

    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt_ids)
    token = int(np.argmax(last_logits(llm)))
    t1 = time.perf_counter()
    out = [token]
    for _ in range(new_tokens - 1):
        llm.eval([token])
        token = int(np.argmax(last_logits(llm)))
        out.append(token)
    t2 = time.perf_counter()
    n = len(prompt_ids)
    return out, {"prompt": n, "new": new_tokens, "ttft_ms": (t1 - t0) * 1e3,
                 "prefill_tps": n / (t1 - t0),
                 "decode_tps": (new_tokens - 1) / (t2 - t1) if new_tokens > 1 else 0.0}


def worker(gguf: Path, prompt_ids: list[int], new_tokens: int, threads: int) -> dict:
    n_ctx = len(prompt_ids) + new_tokens
    llm = load(gguf, n_ctx=n_ctx, threads=threads, n_batch=max(len(prompt_ids), 1))
    llm.eval(prompt_ids[:1])  # touch every weight page once (see the module docstring)
    _, stats = greedy(llm, prompt_ids, new_tokens)
    stats.update(runner="llama.cpp", threads=threads,
                 peak_rss_mib=(peak_rss() or 0) / 2**20)
    return stats


def run(gguf: Path, prompt_ids: list[int], new_tokens: int, threads: int) -> dict:
    """`worker` in its own process (so its peak RSS is its own)."""
    p = subprocess.run([sys.executable, __file__, str(gguf), "--prompt-ids",
                        ",".join(map(str, prompt_ids)), "--new-tokens", str(new_tokens),
                        "--threads", str(threads)], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"llama.cpp on {gguf} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", type=Path)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids (BOS included)")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    ids = [int(t) for t in args.prompt_ids.split(",")]
    print(json.dumps(worker(args.gguf, ids, args.new_tokens, args.threads)))


if __name__ == "__main__":
    main()
