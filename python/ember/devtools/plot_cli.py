"""``python -m ember.devtools.plot_cli DIR [--profile P]``: draws every
``DIR/<method>.memory_plan.json`` (``ember-inspect --plot DIR`` writes them)
as ``<method>.memory_plan.png``, and the profile as ``DIR/profile.png``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.devtools.plot_cli",
                                     description=__doc__)
    parser.add_argument("dir")
    parser.add_argument("--profile", help="a profile: the .eprof file of ember-run --profile-out, "
                        "or the Chrome trace of ember-run --profile FILE.json")
    parser.add_argument("--program", help="the .pte/.bpte the profile must be of")
    args = parser.parse_args(argv)
    from ember.devtools.plots import draw_memory_plan, plot_profile

    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        print(f"ember.devtools.plot_cli: {e} (pip install matplotlib)", file=sys.stderr)
        return 1
    directory = Path(args.dir)
    for data_file in sorted(directory.glob("*.memory_plan.json")):
        out = data_file.with_suffix(".png")
        draw_memory_plan(json.loads(data_file.read_text()), out)
        print(f"wrote {out}")
    if args.profile:
        try:
            out = plot_profile(args.profile, directory / "profile.png", program=args.program)
        except (OSError, ValueError) as e:
            print(f"ember.devtools.plot_cli: {args.profile}: {e}", file=sys.stderr)
            return 1
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
