"""LLM generation speed (#18): a Llama-architecture decoder with random weights,
built in code, exported with ember.llm.export (fp32), run by the C++ runner
ember-llm and by PyTorch eager on transformers' static-cache module (same
prompt, greedy, one process per run); prefill and decode tokens/s, time to first
token, peak RSS, file size.

    python bench/models/llm_bench.py --size 1b --threads 1 2 --out /tmp/llm-bench

--size tiny: 2 layers of width 64 (seconds); 1b: TinyLlama-1.1B's shape
(22 layers, width 2048, 32 heads / 4 KV heads, MLP 5632, vocabulary 32000),
4.4 GB of fp32 weights.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from peers import peak_rss  # bench/models, beside this file

SIZES = {
    "tiny": {"vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2},
    "1b": {"vocab_size": 32000, "hidden_size": 2048, "intermediate_size": 5632,
           "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4},
}


def build_model(size: str, layers: int | None = None):
    import torch
    import transformers

    torch.manual_seed(0)
    shape = dict(SIZES[size])
    if layers:
        shape["num_hidden_layers"] = layers
    config = transformers.LlamaConfig(**shape, max_position_embeddings=2048,
                                      bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    with torch.no_grad():
        return transformers.AutoModelForCausalLM.from_config(config).eval()


def tokenizer_and_prompt(out: Path, prompt_len: int) -> tuple[Path, str]:
    """A small SentencePiece model (its ids are a subset of the model's
    vocabulary) and a prompt of `prompt_len` tokens with BOS."""
    import sentencepiece as spm

    words = ["the", "a", "cat", "dog", "sat", "on", "mat", "ran", "fast", "slow", "red", "blue",
             "green", "tree", "house", "river"]
    rng = random.Random(0)
    corpus = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(200)]
    f = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=f, vocab_size=96,
                                   model_type="bpe", unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                                   minloglevel=2)
    path = out / "tokenizer.model"
    path.write_bytes(f.getvalue())
    sp = spm.SentencePieceProcessor(model_file=str(path))
    text = ""
    for word in (rng.choice(words) for _ in range(10 * prompt_len)):
        cand = (text + " " + word).strip()
        if len(sp.encode(cand)) + 1 > prompt_len:
            break
        text = cand
    return path, text


def export(size: str, layers: int | None, out: Path, max_seq_len: int, fused: bool = True,
           quantize: str | None = None, full_logits: bool = False) -> Path:
    from ember import llm

    suffix = (("" if fused else "-unfused") + (f"-{quantize}" if quantize else "")
              + ("" if full_logits else "-last"))
    pte = out / f"llama-{size}-{layers or SIZES[size]['num_hidden_layers']}l{suffix}.pte"
    if pte.exists():
        return pte
    t = time.perf_counter()
    model = build_model(size, layers)
    et = llm.export(model, max_seq_len=max_seq_len, eos_ids=[], use_sdpa_with_kv_cache=fused,
                    quantize=quantize, full_logits=full_logits)
    et.save(pte)
    print(f"export {size}: {time.perf_counter() - t:.0f} s, {pte.stat().st_size / 2**20:.0f} MiB",
          file=sys.stderr)
    return pte


def run_ember(pte: Path, tok: Path, prompt: str, new: int, threads: int) -> dict:
    exe = Path(sys.executable).parent / "ember-llm"
    cmd = ["/usr/bin/time", "-f", "maxrss_kib %M", str(exe), str(pte), "--tokenizer", str(tok),
           "--prompt", prompt, "--max-new-tokens", str(new), "--threads", str(threads)]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    m = re.search(r"prompt (\d+) tokens, (\d+) new .*time to first token ([\d.]+) ms; prefill "
                  r"([\d.]+) tok/s; decode ([\d.]+) tok/s", p.stderr)
    rss = re.search(r"maxrss_kib (\d+)", p.stderr)
    return {"runner": "ember-llm", "threads": threads, "prompt": int(m[1]), "new": int(m[2]),
                "ttft_ms": float(m[3]), "prefill_tps": float(m[4]), "decode_tps": float(m[5]),
                "peak_rss_mib": int(rss[1]) / 1024, "wall_s": wall}


def eager_worker(size: str, layers: int | None, prompt_len: int, new: int, threads: int,
                 max_seq_len: int) -> None:
    """PyTorch eager on transformers' static-cache module: one prefill call, then greedy steps."""
    import torch
    import transformers
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.set_num_threads(threads)
    model = build_model(size, layers)
    model.generation_config = transformers.GenerationConfig(
        use_cache=True, cache_implementation="static",
        cache_config={"batch_size": 1, "max_cache_len": max_seq_len})
    module = TorchExportableModuleWithStaticCache(model)
    prompt = torch.randint(3, 96, (1, prompt_len))
    with torch.inference_mode():
        t0 = time.perf_counter()
        logits = module(input_ids=prompt, cache_position=torch.arange(prompt_len))
        token = int(logits[0, -1].argmax())
        t1 = time.perf_counter()
        for i in range(new - 1):
            logits = module(input_ids=torch.tensor([[token]]),
                            cache_position=torch.tensor([prompt_len + i]))
            token = int(logits[0, -1].argmax())
        t2 = time.perf_counter()
    rss = (peak_rss() or 0) / 2**20  # VmHWM: ru_maxrss counts the forking parent's
    print(json.dumps({"runner": "eager (static cache)", "threads": threads, "prompt": prompt_len,
                      "new": new, "ttft_ms": (t1 - t0) * 1e3, "prefill_tps": prompt_len / (t1 - t0),
                      "decode_tps": (new - 1) / (t2 - t1), "peak_rss_mib": rss}))


def run_eager(size: str, layers: int | None, prompt_len: int, new: int, threads: int,
              max_seq_len: int) -> dict:
    p = subprocess.run([sys.executable, __file__, "--eager-worker", "--size", size,
                        "--layers", str(layers or 0),
                        "--prompt-len", str(prompt_len), "--new-tokens", str(new),
                        "--threads", str(threads), "--max-seq-len", str(max_seq_len)],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--layers", type=int, default=0,
                    help="decoder layers instead of the size's (exporting the full 1b peaks at "
                         "about 5x its 4.1 GiB of weights)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--max-seq-len", type=int, default=256)
    ap.add_argument("--out", type=Path, default=Path("/tmp/ember-llm-bench"))
    ap.add_argument("--no-eager", action="store_true")
    ap.add_argument("--unfused-attention", action="store_true",
                    help="export with use_sdpa_with_kv_cache=False (the decomposed attention)")
    ap.add_argument("--quantize", choices=["int8", "int4", "8da4w", "8da8w"], default=None,
                    help="quantized linear layers (ember.llm.export(quantize=...): weight-only "
                         "int8/int4, or int8 activations per token with int4/int8 weights); "
                         "eager runs the float model")
    ap.add_argument("--full-logits", action="store_true",
                    help="export with full_logits=True (the output layer on every prompt "
                         "position; the default computes the last one, as llama.cpp does)")
    ap.add_argument("--eager-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.eager_worker:
        eager_worker(args.size, args.layers, args.prompt_len, args.new_tokens, args.threads[0],
                     args.max_seq_len)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    tok, prompt = tokenizer_and_prompt(args.out, args.prompt_len)
    pte = export(args.size, args.layers, args.out, args.max_seq_len, not args.unfused_attention,
                 args.quantize, args.full_logits)
    rows = []
    for threads in args.threads:
        rows.append(run_ember(pte, tok, prompt, args.new_tokens, threads))
        if not args.no_eager:
            rows.append(run_eager(args.size, args.layers, rows[-1]["prompt"], args.new_tokens,
                                  threads, args.max_seq_len))
    size_mib = pte.stat().st_size / 2**20
    layers = args.layers or SIZES[args.size]["num_hidden_layers"]
    attention = "decomposed" if args.unfused_attention else "fused"
    weights = args.quantize or "fp32"
    print(f"Llama {args.size} shape, {layers} layers, {weights} weights, {attention} attention, "
          f".pte {size_mib:.0f} MiB, "
          f"prompt {rows[0]['prompt']} tokens, {args.new_tokens} new")
    print("| runner | threads | TTFT ms | prefill tok/s | decode tok/s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['runner']} | {r['threads']} | {r['ttft_ms']:.0f} | {r['prefill_tps']:.1f} | "
              f"{r['decode_tps']:.2f} | {r['peak_rss_mib']:.0f} |")


if __name__ == "__main__":
    main()
