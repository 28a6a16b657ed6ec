"""CorefUD matching modes end to end: the bundled CorefUD sample (``data/corefud``, the
``headed/`` set of tests/data/coref-corefud) run through the CLI and the API equals the
official CorefUD scorer in its default mode and after a change of mode, which recomputes."""

from __future__ import annotations

import csv

import pytest

from sysdiff.flows.queries import query
from tests.conftest import REPO, TEST_DATA, snapshot

SAMPLE = REPO / "data" / "corefud"
RUN_FILE = SAMPLE / "corefud.toml"
COREF_TABLES = ("coref_scores", "mention_classes", "arcs_scores", "coref_pairs",
                "coref_transitions", "coref_oracles", "coref_agreement")


def expected(mode: str, singletons: str) -> dict[tuple[str, str], tuple[float, ...]]:
    """(system, metric) -> (recall, precision, f1) of the scorer on the bundled responses."""
    with open(TEST_DATA / "coref-corefud" / "expected.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["key"] == "headed/key.conllu"
                and r["mode"] == mode and r["singletons"] == singletons]
    assert len(rows) == 27
    return {(r["response"].removeprefix("headed/").removesuffix(".conllu"), r["metric"]):
            (float(r["recall"]), float(r["precision"]), float(r["f1"])) for r in rows}


def assert_scores(root, mode: str, singletons: str) -> None:
    rows = query(root, "select system, metric, recall, precision, f1, recall_den, "
                       "precision_den from coref_scores where corpus = 'gum'").rows()
    got = {(s, m): (r, p, f) for s, m, r, p, f, _rd, _pd in rows}
    den = {(s, m): (rd, pd) for s, m, _r, _p, _f, rd, pd in rows}
    want = expected(mode, singletons)
    assert set(got) == set(want)
    for k, values in want.items():
        for x, g, w in zip(("recall", "precision", "f1"), got[k], values, strict=True):
            if g is None:  # 0/0 (no number without data) where the scorer prints 0
                undefined = {"recall": den[k][0] == 0, "precision": den[k][1] == 0,
                             "f1": 0 in den[k]}[x]
                assert w == 0 and undefined, (k, x)
            else:
                assert g == pytest.approx(w, abs=1e-9), (k, x)


# the tables with bootstrap intervals end their options with the intervals' settings
INTERVAL_TABLES, INTERVALS = {"coref_scores", "arcs_scores", "coref_pairs"}, (
    "|bootstrap:1000|confidence:0.95|seed:0")


def options_of(root) -> set[str]:
    """The matching options of the coreference tables (the interval settings checked and
    left out)."""
    found = set()
    for t in COREF_TABLES:
        for (o,) in query(root, f"select distinct options from {t} where corpus = 'gum'"
                          ).rows():
            assert o.endswith(INTERVALS) == (t in INTERVAL_TABLES), (t, o)
            found.add(o.removesuffix(INTERVALS))
    return found


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("corefud") / "wh"
    code, out, err = run_cli("run", str(RUN_FILE), "-w", str(root))
    assert code == 0, err
    assert "CoNLL F1 %" in out
    return root


def test_defaults_are_the_corefud_scorers(warehouse):
    """A CorefUD key: head match without singletons, as ``corefud-scorer.py KEY SYS``."""
    assert_scores(warehouse, "head", "ignored")
    assert options_of(warehouse) == {"match:head|singletons:drop"}


def test_head_mode_tells_a_lost_head_apart(warehouse):
    """sys2-nohead has the spans and entities of sys2 without heads: the same mentions in
    exact and partial mode, other ones (hence ARCS differences) in head mode."""
    (n_diff,) = query(warehouse, "select n_diff from coref_pairs where corpus = 'gum' and "
                                 "criterion = 'any' and sys1 = 'sys2' and "
                                 "sys2 = 'sys2-nohead'").row(0)
    assert n_diff > 0


def test_a_change_of_mode_recomputes(tmp_path, cli):
    root = tmp_path / "wh"
    args = ["run", str(RUN_FILE), "-w", str(root)]
    code, _, err = cli(*args, "--match", "partial", "--singletons", "keep")
    assert code == 0, err
    assert_scores(root, "partial", "kept")
    assert options_of(root) == {"match:partial|singletons:keep"}
    before = snapshot(root)
    code, _, err = cli(*args, "--match", "partial", "--singletons", "keep")
    assert code == 0, err
    assert snapshot(root) == before  # the same options: nothing recomputed
    code, _, err = cli(*args, "--match", "exact")
    assert code == 0, err
    assert_scores(root, "exact", "ignored")  # singletons: the CorefUD default
    assert options_of(root) == {"match:exact|singletons:drop"}
    (n_diff,) = query(root, "select sum(n_diff) from coref_pairs where corpus = 'gum' and "
                            "sys1 = 'sys2' and sys2 = 'sys2-nohead'").row(0)
    assert n_diff == 0  # exact match ignores the response's heads


def test_api_takes_the_options(tmp_path, prefect_harness):
    import sysdiff

    systems = {s: SAMPLE / f"{s}.conllu" for s in ("sys1", "sys2", "sys2-nohead")}
    root = sysdiff.evaluate(SAMPLE / "key.conllu", systems, task="coref", corpus="gum",
                            warehouse=tmp_path / "wh", match="head", singletons="keep")
    assert_scores(root, "head", "kept")
    assert options_of(root) == {"match:head|singletons:keep"}


@pytest.mark.parametrize(("extra", "message"), [
    (["--match", "fuzzy"], "unknown match 'fuzzy'; expected one of exact, partial, head"),
    (["--singletons", "no"], "unknown singletons 'no'; expected one of keep, drop"),
])
def test_bad_option_values(tmp_path, cli, extra, message):
    code, _, err = cli("run", str(RUN_FILE), "-w", str(tmp_path / "wh"), *extra)
    assert code == 2
    assert message in err
    assert not (tmp_path / "wh").exists() or not list((tmp_path / "wh").rglob("*.parquet"))


def test_options_apply_to_coreference_only(tmp_path, cli):
    code, _, err = cli("run", "--task", "dep", "--key", str(REPO / "data/sequoia/key.conllu"),
                       "--system", f"a={REPO / 'data/sequoia/key.conllu'}", "--corpus", "s",
                       "--match", "head", "-w", str(tmp_path / "wh"))
    assert code == 2
    assert "--match applies to task coref, not to task dep" in err


def test_run_file_keys_are_checked(tmp_path, cli):
    bad = tmp_path / "bad.toml"
    bad.write_text(RUN_FILE.read_text().replace('task = "coref"', 'task = "coref"\nmatch = 1')
                   .replace('"key.conllu"', f'"{SAMPLE / "key.conllu"}"'))
    code, _, err = cli("run", str(bad), "-w", str(tmp_path / "wh"))
    assert code == 2
    assert "'match' must be a string, not the integer 1" in err
    good = tmp_path / "good.toml"
    text = RUN_FILE.read_text().replace('task = "coref"', 'task = "coref"\nmatch = "exact"\n'
                                        'singletons = "keep"')
    for f in ("key", "sys1", "sys2", "sys2-nohead"):
        text = text.replace(f'"{f}.conllu"', f'"{SAMPLE / f}.conllu"')
    good.write_text(text)
    code, _, err = cli("run", str(good), "-w", str(tmp_path / "wh"))
    assert code == 0, err
    assert_scores(tmp_path / "wh", "exact", "kept")
