"""Coreference and UNL shards: identical warehouse tables with any shard size and on Dask.

Every partition of every table is compared row by row, in file order (only the ingest time
differs between runs), so a shard size that changed a value, a type or the order of rows
would fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sysdiff.flows.warehouse import read_manifest
from tests.conftest import REPO, TEST_DATA

LITBANK = REPO / "data" / "litbank"
REFSCORER = TEST_DATA / "coref-refscorer"
CASES = TEST_DATA / "unl" / "cases"
REAL = TEST_DATA / "unl" / "real"
VOLATILE = ["ingested_at", "path", "mtime_ns"]   # inputs are rebuilt in each run's folder
UNL_CASES = ["01_identical", "02_wrong_label_small_graph", "03_wrong_label_larger_graph_temp_uw",
             "05_scope_renumbered", "07_disconnected", "08_nl_word_in_graph"]


# ------------------------------------------------------------------------------- corpora


def _renamed(path: Path, name: str) -> str:
    """One scorer test file as the document ``name`` (part kept)."""
    text = path.read_text(encoding="utf-8")
    return re.sub(r"^#begin document \([^)]*\)", f"#begin document ({name})", text, flags=re.M)


def _no_mentions(text: str) -> str:
    """The same document with every coreference field emptied."""
    return re.sub(r"^([^#\n].*?[ \t]+)\S+[ \t]*$", r"\1-", text, flags=re.M)


def refscorer_corpus(tmp: Path) -> list[str]:
    """The reference scorer's cases as one corpus of 17 documents (file order differs from
    sorted order) with three responses; r3 has no mention at all in document ``g``."""
    letters, a = "bcdefg", [1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13]   # the A responses
    docs = {f"a{k + 1}": ("TC-A.key", f"TC-A-{a[k]}.response", f"TC-A-{a[(k + 1) % 11]}"
                          ".response", f"TC-A-{a[(k + 5) % 11]}.response") for k in range(11)}
    docs |= {x: (f"TC-{x.upper()}.key", f"TC-{x.upper()}-1.response", f"TC-{x.upper()}.key",
                 f"TC-{x.upper()}-1.response" if x in "bcd" else f"TC-{x.upper()}.key")
             for x in letters}
    files: dict[str, list[str]] = {"key": [], "r1": [], "r2": [], "r3": []}
    for name, sources in docs.items():
        for who, src in zip(files, sources, strict=True):
            text = _renamed(REFSCORER / src, name)
            files[who].append(_no_mentions(text) if (who, name) == ("r3", "g") else text)
    for who, texts in files.items():
        (tmp / f"{who}.conll").write_text("\n".join(texts), encoding="utf-8")
    return ["--task", "coref", "--key", str(tmp / "key.conll"),
            *[f"--system={s}={tmp / s}.conll" for s in ("r1", "r2", "r3")]]


def litbank_corpus(_tmp: Path) -> list[str]:
    """The bundled LitBank sample: 20 documents, three systems."""
    return ["--task", "coref", "--key", str(LITBANK / "key.conll"),
            *[f"--system={s}={LITBANK / s}.conll" for s in ("sys1", "sys2", "sys3")]]


def unl_cases_corpus(tmp: Path) -> list[str]:
    """The hand-worked UNL cases as one file, three versions (v2 mixes v0 and v1)."""
    def joined(pick) -> str:
        return "\n".join((CASES / c / f"{pick(k)}.unl").read_text() for k, c in
                         enumerate(UNL_CASES))

    for name, pick in {"key": lambda k: "expected", "v0": lambda k: "expected",
                       "v1": lambda k: "actual",
                       "v2": lambda k: "actual" if k % 2 else "expected"}.items():
        (tmp / f"{name}.unl").write_text(joined(pick))
    return ["--task", "unl", "--key", str(tmp / "key.unl"),
            *[f"--system={v}={tmp / v}.unl" for v in ("v0", "v1", "v2")]]


def _edit_every_other(text: str) -> str:
    """Every other ``[S:`` block with its first ``agt(`` relation relabelled ``aoj(``."""
    blocks = text.split("[S:")
    return "[S:".join(b.replace("agt(", "aoj(", 1) if k % 2 else b for k, b in enumerate(blocks))


def unl_real_corpus(tmp: Path) -> list[str]:
    """A real UNLarium export (13 sentences, aligned by id) against itself, its UCL encoding
    (8 sentences) and an edited copy."""
    ucn = REAL / "unlarium_aa1_en_ucn.raw.html.txt"
    (tmp / "edit.txt").write_text(_edit_every_other(ucn.read_text(encoding="utf-8")),
                                  encoding="utf-8")
    return ["--task", "unl", "--key", str(ucn), f"--system=same={ucn}",
            f"--system=ucl={REAL / 'unlarium_aa1_en_ucl.raw.html.txt'}",
            f"--system=edit={tmp / 'edit.txt'}"]


def nl_corpus(tmp: Path) -> list[str]:
    """NLization: plain-text sentences (aligned by position) and three outputs."""
    from sysdiff.schemas.formats.unl import read_nl

    lines = [s.text or "" for s in read_nl(REAL / "unlarium_aa1_en_ucn.raw.html.txt")]
    case = {side: [(CASES / c / f"{side}.txt").read_text().strip() for c in
                   ("10a_nl_exact_after_normalisation", "10b_nl_uw_in_output")]
            for side in ("expected", "actual")}
    outputs = {
        "key": lines + case["expected"],
        "same": lines + case["expected"],
        "cut": [" ".join(t.split()[:-1]) if k % 3 == 0 else t for k, t in enumerate(lines)]
        + case["actual"],
        "upper": [t.upper() for t in lines] + case["actual"][::-1],
    }
    for name, rows in outputs.items():
        (tmp / f"{name}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return ["--task", "nl", "--key", str(tmp / "key.txt"),
            *[f"--system={s}={tmp / s}.txt" for s in ("same", "cut", "upper")]]


CORPORA = {"litbank": litbank_corpus, "refscorer": refscorer_corpus,
           "unl-cases": unl_cases_corpus, "unl-real": unl_real_corpus, "nl": nl_corpus}
# shard sizes (sentences): one document (coref) or sentence (UNL) per shard, and between
SIZES = {"litbank": ["1", "200"], "refscorer": ["1", "4"], "unl-cases": ["1", "4"],
         "unl-real": ["1", "5"], "nl": ["1", "6"]}


# ------------------------------------------------------------------------------- helpers


def partitions(root: Path) -> dict[tuple[str, str], tuple[str, pl.DataFrame]]:
    """(table, partition) -> (signature, rows in file order without the ingest time)."""
    manifest = read_manifest(root)
    return {(table, part): (entry["sig"], pl.read_parquet(root / entry["file"])
                            .drop(VOLATILE, strict=False))
            for table, parts in manifest["tables"].items() for part, entry in parts.items()}


def assert_same_warehouse(a: Path, b: Path) -> None:
    """Every partition equal, bootstrap intervals included (and not all NULL)."""
    pa_, pb = partitions(a), partitions(b)
    assert sorted(pa_) == sorted(pb)
    for key, (sig, df) in pa_.items():
        assert pb[key][0] == sig, key
        assert df.height > 0, key
        assert df.equals(pb[key][1]), key
        assert df.schema == pb[key][1].schema, key
        for column in ("ci_low", "delta_ci_low"):
            if column in df.columns:
                assert df[column].null_count() < df.height, (key, column)


def run(cli, corpus: str, tmp: Path, root: Path, *extra: str) -> None:
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    args = CORPORA[corpus](data)
    code, _, err = cli("run", *args, "--corpus", corpus.replace("-", "_"), "-w", str(root),
                       *extra)
    assert code == 0, err


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory, prefect_harness):
    """corpus -> warehouse of one run with every document in one shard (built lazily)."""
    from tests.conftest import run_cli

    roots: dict[str, Path] = {}

    def get(corpus: str) -> Path:
        if corpus not in roots:
            tmp = tmp_path_factory.mktemp(corpus)
            run(run_cli, corpus, tmp, tmp / "wh", "--shard-sents", "1000000")
            roots[corpus] = tmp / "wh"
        return roots[corpus]

    return get


# --------------------------------------------------------------------------------- tests


@pytest.mark.parametrize(("corpus", "size"), [(c, s) for c, sizes in SIZES.items()
                                              for s in sizes])
def test_shard_size_does_not_change_any_table(corpus, size, unsharded, tmp_path, cli):
    run(cli, corpus, tmp_path, tmp_path / "wh", "--shard-sents", size)
    assert_same_warehouse(unsharded(corpus), tmp_path / "wh")


def test_every_table_is_written(unsharded):
    tables = {t for c in CORPORA for t, _ in partitions(unsharded(c))}
    assert {"coref_scores", "mention_classes", "arcs_scores", "coref_pairs",
            "coref_transitions", "coref_oracles", "coref_agreement", "unl_sentences",
            "unl_scores", "unl_pairs", "unl_oracle", "unl_moved"} <= tables


def test_dask_cluster_gives_identical_tables(unsharded, tmp_path, cli):
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        for corpus, size in (("refscorer", "3"), ("unl-real", "4")):
            root = tmp_path / corpus / "wh"
            run(cli, corpus, tmp_path / corpus, root, "--shard-sents", size,
                "--dask-address", cluster.scheduler_address)
            assert_same_warehouse(unsharded(corpus), root)


def test_an_added_system_gives_the_tables_of_a_fresh_run(unsharded, tmp_path, cli):
    """Only the new system's partitions and the comparisons are recomputed (in shards of
    documents that hold every system), and they equal those of one run with all three."""
    data = tmp_path / "data"
    data.mkdir()
    args = refscorer_corpus(data)
    root = tmp_path / "wh"
    for systems, size in ((args[4:6], "1"), (args[4:], "3")):
        code, _, err = cli("run", *args[:4], *systems, "--corpus", "refscorer", "-w",
                           str(root), "--shard-sents", size)
        assert code == 0, err
    assert_same_warehouse(unsharded("refscorer"), root)


def test_one_coref_system_gets_scores_and_oracles(tmp_path, cli):
    for size in ("1", "1000"):
        root = tmp_path / size / "wh"
        code, _, err = cli("run", "--task", "coref", "--key", str(LITBANK / "key.conll"),
                           f"--system=s={LITBANK / 'sys1.conll'}", "--corpus", "one", "-w",
                           str(root), "--shard-sents", size)
        assert code == 0, err
    tables = {t for t, _ in partitions(root)}
    assert {"coref_scores", "arcs_scores", "coref_oracles"} <= tables
    assert not tables & {"coref_pairs", "coref_agreement"}
    assert_same_warehouse(tmp_path / "1" / "wh", root)


def test_document_counts_do_not_depend_on_the_other_documents():
    """The root of shard identity: every float of a document's counts has the same bits
    whether the document is scored alone or with the whole corpus."""
    from sysdiff.schemas.formats.coref import read_coref
    from sysdiff.transforms.coref import coref_counts

    key = read_coref(LITBANK / "key.conll")
    for s in ("sys1", "sys2"):
        resp = read_coref(LITBANK / f"{s}.conll")
        alone = pl.concat([coref_counts(key.filter(pl.col("doc") == d),
                                        resp.filter(pl.col("doc") == d))
                           for d in sorted(set(key["doc"]))])
        assert alone.equals(coref_counts(key, resp))


def test_plan_ranges_never_splits_a_unit():
    from sysdiff.transforms.plan import plan_ranges

    assert plan_ranges(np.array([3, 1, 4, 1, 5]), 4) == [(0, 2), (2, 3), (3, 5)]
    assert plan_ranges(np.array([3, 1, 4, 1, 5]), 1) == [(k, k + 1) for k in range(5)]
    assert plan_ranges(np.array([3, 1, 4, 1, 5]), 10**6) == [(0, 5)]
    assert plan_ranges(np.ones(7, np.int64), 3) == [(0, 3), (3, 6), (6, 7)]
    assert plan_ranges(np.zeros(0, np.int64), 3) == []


def test_document_shards_follow_sorted_names(tmp_path):
    from sysdiff.flows.coref import plan_doc_shards, read_shard_mentions
    from sysdiff.schemas.formats.coref import read_coref

    key = read_coref(LITBANK / "key.conll")
    path = str(tmp_path / "key.parquet")
    key.write_parquet(path)
    one = plan_doc_shards({"k": path}, 1)
    names = sorted(set(key["doc"]))
    assert [s.docs for s in one] == [(d,) for d in names]
    assert [s.docs for s in plan_doc_shards({"k": path}, 10**6)] == [tuple(names)]
    few = plan_doc_shards({"k": path}, 200)
    assert 1 < len(few) < len(names) and sum(len(s.docs) for s in few) == len(names)
    assert pl.concat([read_shard_mentions(path, s) for s in one]).sort(
        "doc", maintain_order=True).equals(key.sort("doc", maintain_order=True))


def test_a_run_that_sets_no_shard_size_is_cut_by_its_words_files_and_threads():
    """The sized plan (METRICS' sums do not depend on it): words x files / SHARD_CELLS
    shards, rounded up to a multiple of the threads, never below MIN_SHARD_SENTS sentences."""
    from sysdiff.transforms.plan import MIN_SHARD_SENTS, SHARD_CELLS, sized_shard_sents

    assert (SHARD_CELLS, MIN_SHARD_SENTS) == (4_000_000, 5000)  # the figures below use them
    # 1M words, key + 10 systems: 11M cells -> 3 shards -> 4 on 2 threads -> 11,000 each
    assert sized_shard_sents(44_000, 1_000_000, 11, 2) == 11_000
    # the same on 8 threads: 8 shards of 5,500; on 1 thread: 3 shards
    assert sized_shard_sents(44_000, 1_000_000, 11, 8) == 5_500
    assert sized_shard_sents(44_000, 1_000_000, 11, 1) == 14_667
    # 10M words x 11 files: 27.5 -> 28 shards (a multiple of 2) of 15,847 sentences
    assert sized_shard_sents(443_700, 10_000_000, 11, 2) == 15_847
    # a small corpus is one shard, as with a set size of 5,000; never fewer sentences
    assert sized_shard_sents(3_000, 60_000, 3, 2) == 5000
    assert sized_shard_sents(44_000, 1_000_000, 11, 64) == 5000
    assert sized_shard_sents(0, 0, 1, 0) == 5000


def test_shard_plan_sizes_a_run_without_a_size_and_keeps_a_set_one(monkeypatch):
    """``shard_plan``: a set ``shard_sents`` wins; without one, the sized plan is cut from
    the key's sentences and words and the task runner's threads (here 2)."""
    import sysdiff.flows.shards as shards
    import sysdiff.transforms.plan as plan

    monkeypatch.setattr(shards, "runner_threads", lambda: 2)
    monkeypatch.setattr(plan, "MIN_SHARD_SENTS", 1)
    monkeypatch.setattr(plan, "SHARD_CELLS", 1000)
    # 12 documents of 10 sentences of 5 words: 600 words x 3 files = 1,800 cells
    key = pl.DataFrame({"sent": np.arange(120), "doc": np.repeat(np.arange(12), 10),
                        "n_words": np.full(120, 5)})
    # 2 shards (1,800 / 1,000, a multiple of 2) of 60 sentences: 6 documents each
    sized = shards.shard_plan(key, None, 3)
    assert [(s.lo, s.hi) for s in sized] == [(0, 60), (60, 120)]
    assert [(s.lo, s.hi) for s in shards.shard_plan(key, 30, 3)] == [
        (0, 30), (30, 60), (60, 90), (90, 120)]
    # 10 files: 6,000 cells -> 6 shards of 20 sentences
    assert len(shards.shard_plan(key, None, 10)) == 6
