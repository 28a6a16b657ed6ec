"""``sysdiff rm`` (issue 23): removing a system leaves the warehouse as a fresh run of the
systems left would have written it (every task; the tables that depended on it computed
again from what the warehouse holds, without the input files); removing a corpus leaves no
row or file of it; nothing changes without a confirmation."""

from __future__ import annotations

import io
import re
import shutil
import tomllib
from pathlib import Path

import pytest

import sysdiff
from sysdiff.flows.queries import query
from tests.conftest import REPO, run_cli, snapshot
from tests.snapshot import table_dumps

SAMPLES = {  # run file, the system removed
    "sequoia": (REPO / "data/sequoia/sequoia.toml", "seqsm@ud2.8"),
    "history": (REPO / "data/sequoia/history.toml", "parser@3"),
    "litbank": (REPO / "data/litbank/litbank.toml", "sys2"),
    "corefud": (REPO / "data/corefud/corefud.toml", "sys2"),
    "unl": (REPO / "data/unl/unl.toml", "grammar@2"),
    "ner": (REPO / "data/ner/ner.toml", "spacy_sm@3.6.0"),
    "srl": (REPO / "data/srl/srl.toml", "sys1"),
}
TRIALS = ["--ar-trials", "500"]


def without(toml: Path, system: str, out: Path) -> Path:
    """The run file ``toml`` without ``system``, its paths made absolute."""
    cfg = tomllib.loads(toml.read_text())
    base = toml.parent
    lines = []
    for key, value in cfg.items():
        if isinstance(value, str) and key in ("key", "map"):
            lines.append(f'{key} = "{base / value}"')
        elif isinstance(value, str | int):
            lines.append(f"{key} = {value!r}".replace("'", '"'))
    lines.append("[systems]")
    lines += [f'"{n}" = "{base / f}"' for n, f in cfg["systems"].items() if n != system]
    for table in ("versions", "mappings"):
        for name, value in cfg.get(table, {}).items():
            lines.append(f"[{table}]" if table == "versions" else f'[mappings."{name}"]')
            lines.append(f'"{name}" = {value!r}'.replace("'", '"') if table == "versions"
                         else "\n".join(f'"{a}" = "{b}"' for a, b in value.items()))
    out.write_text("\n".join(lines) + "\n")
    return out


def dumps(root: Path) -> dict[str, str]:
    """Every table's canonical dump, without ``options``: a row keeps the options string of
    the run that computed it (the removed system's label mapping may be named there)."""
    import io

    import polars as pl

    out = {}
    for table, text in table_dumps(root).items():
        df = pl.read_csv(io.StringIO(text), infer_schema=False)
        out[table] = df.drop("options", strict=False).write_csv()
    return out


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_removing_a_system_equals_a_run_without_it(sample, tmp_path, cli):
    toml, system = SAMPLES[sample]
    full, fresh = tmp_path / "full", tmp_path / "fresh"
    code, _, err = cli("run", str(toml), "-w", str(full), *TRIALS)
    assert code == 0, err
    corpus = tomllib.loads(toml.read_text())["corpus"]
    code, out, err = cli("rm", "--corpus", corpus, "--system", system, "--yes", "-w", str(full))
    assert code == 0, err
    assert out.startswith(f"removed {system} from corpus '{corpus}'") and "recomputed" in out
    assert err == ""  # the corpus' notes were said by its run
    code, _, err = cli("run", str(without(toml, system, tmp_path / "rest.toml")), "-w",
                       str(fresh), *TRIALS)
    assert code == 0, err
    got, want = dumps(full), dumps(fresh)
    assert sorted(got) == sorted(want)
    differ = [t for t in want if got[t] != want[t]]
    assert not differ, differ
    for table in ("systems", "scores", "pairs", "coref_pairs", "span_pairs", "srl_pairs",
                  "unl_pairs"):
        if table in got:
            columns = [c for c in ("system", "sys1", "sys2") if c in got[table].split("\n")[0]]
            where = " or ".join(f"{c} = '{system}'" for c in columns)
            assert query(full, f"select count(*) as n from {table} where {where}")["n"][0] == 0
    # a rerun of the run file without the system: nothing left to compute
    before = snapshot(full)
    code, _, err = cli("run", str(tmp_path / "rest.toml"), "-w", str(full), *TRIALS)
    assert code == 0 and snapshot(full) == before, err


def test_a_name_removes_every_version(bundled, tmp_path, cli):
    root = tmp_path / "wh"
    shutil.copytree(bundled("sequoia"), root)
    code, out, err = cli("rm", "--corpus", "sequoia", "--system", "seqsm", "--yes", "-w",
                         str(root))
    assert code == 0, err
    assert "removed seqsm@ud2.8, seqsm@ud2.16 from corpus 'sequoia'" in out
    assert query(root, "select distinct system from scores order by 1")["system"].to_list() \
        == ["spacy_md@3.8.0", "spacy_sm@3.8.0"]
    assert query(root, "select distinct name from history order by 1")["name"].to_list() == [
        "spacy_md", "spacy_sm"]  # no seqsm version left in the histories
    assert query(root, "select count(*) as n from pairs")["n"][0] > 0


def test_nothing_is_removed_without_a_confirmation(bundled, tmp_path):
    root = bundled("sequoia")
    before = snapshot(root)
    code, out, err = run_cli("rm", "--corpus", "sequoia", "--system", "seqsm@ud2.8", "-w",
                             str(root))
    assert code == 2 and err.count("\n") == 1, err
    assert "rm would remove seqsm@ud2.8 from corpus 'sequoia' (3 system(s) left" in err
    assert "give --yes" in err
    code, out, err = run_cli("rm", "--corpus", "sequoia", "-w", str(root))
    assert code == 2 and "rm would remove corpus 'sequoia' (dep): its key and 4 system(s)" in err
    code, out, err = run_cli("rm", "--corpus", "sequoia", "--system", "seqsm@ud2.8",
                             "--system", "seqsm@ud2.16", "--system", "spacy_md",
                             "--system", "spacy_sm", "--yes", "-w", str(root))
    assert code == 2 and "that removes every system of corpus 'sequoia'" in err
    assert "sysdiff rm --corpus sequoia" in err
    assert snapshot(root) == before


def test_removing_a_corpus_leaves_nothing_of_it(bundled, tmp_path, cli):
    root = tmp_path / "wh"
    shutil.copytree(bundled("sequoia"), root)
    code, _, err = cli("run", str(REPO / "data/litbank/litbank.toml"), "-w", str(root),
                       *TRIALS)
    assert code == 0, err
    sequoia = {t: d for t, d in table_dumps(root).items() if "litbank" not in d}
    code, out, err = cli("rm", "--corpus", "litbank", "--yes", "-w", str(root))
    assert code == 0, err
    assert out.startswith("removed corpus 'litbank' (coref: the key and 3 system(s): "
                          "sys1, sys2, sys3;")
    after = table_dumps(root)
    assert not any("litbank" in d for d in after.values())
    assert {t: after[t] for t in sequoia} == sequoia  # the other corpus is untouched
    assert not [p for p in root.rglob("*") if "litbank" in p.name]
    code, out, err = run_cli("show", "coref", "-w", str(root))
    assert code == 2 and "needs a coref corpus" in err


def test_the_api_removes_too(tmp_path, prefect_harness):
    from tests.test_scale import first_sentences

    seq = REPO / "data/sequoia"
    key = first_sentences(seq / "key.conllu", tmp_path / "key.conllu", 20)
    files = {n: first_sentences(seq / f, tmp_path / f, 20) for n, f in (
        ("sm", "fr_core_news_sm-3.8.0.conllu"), ("md", "fr_core_news_md-3.8.0.conllu"),
        ("old", "seqsm_local-ud2.8.conllu"))}
    wh = sysdiff.evaluate(key=key, systems=files, corpus="c", task="dep",
                          warehouse=tmp_path / "wh", ar_trials=100)
    done = sysdiff.remove("c", "old", warehouse=wh)
    assert done.removed == ("old",) and done.kept == ("md", "sm")
    assert sorted(wh.scores["system"]) == ["md", "sm"]
    fresh = sysdiff.evaluate(key=key, systems={n: files[n] for n in ("sm", "md")}, corpus="c",
                             task="dep", warehouse=tmp_path / "fresh", ar_trials=100)
    assert dumps(wh.root) == dumps(fresh.root)
    with pytest.raises(sysdiff.InputError, match="no system 'nope' in corpus 'c'"):
        sysdiff.remove("c", ["nope"], warehouse=wh)
    sysdiff.remove("c", warehouse=wh)
    assert not re.search("corpus=c", (wh.root / "manifest.json").read_text())


class Terminal(io.StringIO):
    """Typed answers on a terminal."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_rm_asks(bundled, tmp_path, cli, monkeypatch):
    root = tmp_path / "wh"
    shutil.copytree(bundled("sequoia"), root)
    before = snapshot(root)
    argv = ["rm", "--corpus", "sequoia", "--system", "seqsm@ud2.8", "-w", str(root)]
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    code, out, err = cli(*argv)
    assert code == 1, err
    assert out == ("Remove seqsm@ud2.8 from corpus 'sequoia' (3 system(s) left: seqsm@ud2.16, "
                   "spacy_md@3.8.0, spacy_sm@3.8.0)? [y/N]: nothing removed\n")
    assert snapshot(root) == before
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, out, err = cli(*argv)
    assert code == 0, err
    assert "[y/N]: removed seqsm@ud2.8 from corpus 'sequoia'" in out  # the answer's echo
    # is the terminal's
    assert "seqsm@ud2.8" not in query(root, "select distinct system from scores")["system"]
