"""Partial failure is contained: `run --keep-going` evaluates and commits the valid systems,
reports each skipped one in one line (file:line: reason) and exits 3; `serve` always works
that way, per corpus and per system, and ends with a summary."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from tests.conftest import REPO, SEQUOIA, snapshot
from tests.test_scale import first_sentences

LITBANK = REPO / "data" / "litbank"
UNL = REPO / "data" / "unl"


def merged_word(src: Path, dst: Path) -> tuple[Path, int]:
    """``src`` with the first two words of its first sentence without multiword tokens
    merged into one with a stray character (``a`` + ``b`` -> ``abx``: its text differs from
    the key's, so it cannot be aligned), IDs and heads renumbered; returns the file and the
    line of the merged word."""
    blocks = src.read_text(encoding="utf-8").split("\n\n")
    k = next(k for k, b in enumerate(blocks) if k and not any(
        "-" in t.split("\t")[0] or "." in t.split("\t")[0]
        for t in b.split("\n") if t and not t.startswith("#")))
    lines = blocks[k].split("\n")
    rows = [i for i, t in enumerate(lines) if t and not t.startswith("#")]
    first, second = lines[rows[0]].split("\t"), lines[rows[1]].split("\t")
    first[1] += second[1] + "x"
    lines[rows[0]] = "\t".join(first)
    del lines[rows[1]]
    for i in rows[:1] + [r - 1 for r in rows[2:]]:
        f = lines[i].split("\t")
        f[0] = str(int(f[0]) - (int(f[0]) > 2))
        head = int(f[6])
        f[6] = str(1 if head == 2 else head - (head > 2))
        lines[i] = "\t".join(f)
    blocks[k] = "\n".join(lines)
    dst.write_text("\n\n".join(blocks), encoding="utf-8")
    before = "\n\n".join(blocks[:k]) + "\n\n"
    return dst, before.count("\n") + rows[0] + 1


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("kg")
    out = {"key": first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 12),
           "good": first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu",
                                   tmp / "good.conllu", 12)}
    whole = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "sm.conllu", 12)
    out["merged"], out["merged_line"] = merged_word(whole, tmp / "merged.conllu")
    out["empty"] = tmp / "empty.conllu"
    out["empty"].write_text("")
    out["missing"] = tmp / "missing.conllu"
    return out


def skipped_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "skipped:" in line]


def test_keep_going_commits_the_valid_systems(files, tmp_path, cli):
    root = tmp_path / "wh"
    argv = ["run", "--key", str(files["key"]), "--corpus", "c", "--ar-trials", "50",
            "--system", f"good={files['good']}", "--system", f"merged={files['merged']}",
            "--system", f"empty={files['empty']}", "--system", f"gone={files['missing']}",
            "-w", str(root)]
    code, out, err = cli(*argv)
    assert code == 2 and "Traceback" not in err  # without --keep-going: the first bad file
    assert not root.exists()
    code, out, err = cli(*argv, "--keep-going")
    assert code == 3, err
    lines = skipped_lines(err)
    assert len(lines) == 3, err
    by_name = {line.split("'")[1]: line for line in lines}
    assert f"{files['empty']}: file is empty" in by_name["empty"]
    assert f"{files['missing']}: no such file" in by_name["gone"]
    merged = by_name["merged"]
    assert f"{files['merged']}:{files['merged_line']}: the text differs" in merged
    assert "the text differs from the key's at character" in merged
    assert query(root, "select distinct system from scores")["system"].to_list() == ["good"]
    assert "good" in out  # the summary of what was evaluated


def test_keep_going_with_every_system_bad_is_an_error(files, tmp_path, cli):
    code, _, err = cli("run", "--key", str(files["key"]), "--corpus", "c", "--keep-going",
                       "--system", f"empty={files['empty']}", "--system",
                       f"merged={files['merged']}", "-w", str(tmp_path / "wh"))
    assert code == 2 and "no system left to evaluate" in err
    assert snapshot(tmp_path / "wh") == {}


def test_keep_going_coreference(tmp_path, cli):
    """A response with a document the key lacks is skipped; coreference without a POS
    column warns once that mention types are unavailable."""
    bad = tmp_path / "bad.conll"
    bad.write_text((LITBANK / "sys1.conll").read_text().replace(
        "#begin document (1023_bleak_house_brat)", "#begin document (other_doc)", 1))
    root = tmp_path / "wh"
    code, _, err = cli("run", "--key", str(LITBANK / "key.conll"), "--system",
                       f"sys2={LITBANK / 'sys2.conll'}", "--system", f"bad={bad}", "--task",
                       "coref", "--corpus", "lit", "--keep-going", "-w", str(root))
    assert code == 3, err
    [line] = skipped_lines(err)
    assert "system 'bad' skipped: " in line and str(bad) in line
    assert query(root, "select distinct system from coref_scores")["system"].to_list() == [
        "sys2"]
    notes = [x for x in err.splitlines() if "mention types are unavailable (UNKNOWN)" in x]
    assert len(notes) == 1 and "key.conll" in notes[0] and "sys2.conll" in notes[0]


def test_keep_going_unl(tmp_path, cli):
    bad = tmp_path / "bad.unl"
    bad.write_text("this is not UNL at all\n")
    root = tmp_path / "wh"
    code, _, err = cli("run", "--key", str(UNL / "expected.unl"), "--system",
                       f"g@1={UNL / 'grammar@1.unl'}", "--system", f"g@2={UNL / 'grammar@2.unl'}",
                       "--system", f"bad={bad}", "--task", "unl", "--corpus", "u",
                       "--keep-going", "-w", str(root))
    assert code == 3, err
    [line] = skipped_lines(err)
    assert f"system 'bad' skipped: {bad}:1: not a UNL document" in line
    assert sorted(query(root, "select system from unl_scores")["system"]) == ["g@1", "g@2"]
    assert query(root, "select count(*) as n from unl_pairs")["n"][0] == 2


def test_serve_skips_bad_corpora_and_files(files, tmp_path, cli):
    watch = tmp_path / "watch"
    for corpus in ("seq", "seq2", "bad name"):
        (watch / corpus / "systems").mkdir(parents=True)
        shutil.copy(files["key"], watch / corpus / "key.conllu")
        shutil.copy(files["good"], watch / corpus / "systems" / "good.conllu")
        (watch / corpus / "corpus.toml").write_text("ar_trials = 50\n")
    shutil.copy(files["good"], watch / "seq" / "systems" / "a b.conllu")
    (watch / "seq" / "systems" / "empty.conllu").write_text("")
    shutil.copy(files["merged"], watch / "seq2" / "systems" / "merged.conllu")
    (watch / "seq3" / "systems").mkdir(parents=True)  # a bad corpus.toml
    shutil.copy(files["key"], watch / "seq3" / "key.conllu")
    shutil.copy(files["good"], watch / "seq3" / "systems" / "good.conllu")
    (watch / "seq3" / "corpus.toml").write_text('ar_trials = "many"\n')
    root = tmp_path / "wh"
    code, out, err = cli("serve", "--watch", str(watch), "--once", "-w", str(root))
    assert code == 3, err
    lines = skipped_lines(err)
    assert len(lines) == 5, err
    assert any(f"{watch / 'seq' / 'systems' / 'a b.conllu'}: skipped: invalid system name "
               "'a b'" in x for x in lines)
    assert any("system 'empty' skipped: " in x and "file is empty" in x for x in lines)
    assert any("system 'merged' skipped: " in x and "the text differs" in x for x in lines)
    assert any("corpus 'bad name' skipped: invalid corpus name 'bad name'" in x for x in lines)
    assert any("corpus 'seq3' skipped: " in x and "'ar_trials' must be a positive integer"
               in x for x in lines)
    assert out.strip() == ("evaluated 2 corpora: seq, seq2; skipped 2 corpora and 3 system "
                           "files (see the lines above)")
    got = query(root, "select distinct corpus, system from scores order by all").rows()
    assert got == [("seq", "good"), ("seq2", "good")]
