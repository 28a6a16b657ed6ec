"""Ingest speed: sysdiff's validating reader vs a bare polars.read_csv vs the conllu package.

    python benchmarks/ingest.py [--words 1000000] [--repeat 5] [--no-conllu]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import median_time  # noqa: E402
from sysdiff.schemas.formats.conllu import read_conll  # noqa: E402

TAGS = ["NOUN", "VERB", "DET", "ADP", "PUNCT", "ADJ", "PRON", "ADV", "PROPN", "CCONJ"]
RELS = ["nsubj", "obj", "det", "case", "punct", "amod", "advmod", "obl", "nmod", "conj"]


def synthetic_conllu(path: Path, n_words: int, seed: int = 1) -> None:
    """Write a valid CoNLL-U file of about ``n_words`` words (sentences of 5-40 words)."""
    rng = random.Random(seed)
    words, s = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while words < n_words:
            length = rng.randint(5, 40)
            s += 1
            out.write(f"# sent_id = s{s}\n# text = synthetic sentence {s}\n")
            for i in range(1, length + 1):
                head = 0 if i == 1 else rng.randint(1, length)
                out.write(f"{i}\tw{i}\tl{i}\t{rng.choice(TAGS)}\t_\tNumber=Sing\t{head}\t"
                          f"{rng.choice(RELS)}\t_\t_\n")
            out.write("\n")
            words += length


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--words", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-conllu", action="store_true", help="skip the (slow) conllu package")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.conllu"
        synthetic_conllu(path, args.words)
        size = path.stat().st_size / 1e6
        ours = median_time(lambda: read_conll(path), args.repeat)
        bare = median_time(lambda: pl.read_csv(path, separator="\t", has_header=False,
                                               comment_prefix="#", quote_char=None),
                           args.repeat)
        print(f"file: {args.words:,} words, {size:.1f} MB; medians of {args.repeat} runs")
        print(f"sysdiff read_conll (validating): {ours:8.3f} s")
        print(f"bare polars.read_csv:            {bare:8.3f} s")
        print(f"ratio sysdiff / bare polars:     {ours / bare:8.2f}x  (target <= 1.5x)")
        if not args.no_conllu:
            import conllu

            t0 = time.perf_counter()
            with path.open(encoding="utf-8") as f:
                n = sum(len(s) for s in conllu.parse_incr(f))
            slow = time.perf_counter() - t0
            print(f"conllu package (1 run, {n:,} tokens): {slow:8.3f} s")
            print(f"speed-up over conllu:            {slow / ours:8.1f}x  (target >= 15x)")


if __name__ == "__main__":
    main()
