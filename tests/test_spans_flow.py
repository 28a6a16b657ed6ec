"""The ner task end to end on the bundled UNER sample: every conlleval and seqeval figure of
``data/ner/expected.json``, shard-size invariance, cross-checks with seqeval on ill-formed
output, bad inputs, and the read-only commands (show, examples, check, report)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from sysdiff.flows.queries import query
from tests.conftest import REPO, run_cli, snapshot
from tests.snapshot import digests

NER = REPO / "data" / "ner"
EXPECTED = json.loads((NER / "expected.json").read_text())
FILES = {"spacy_sm@3.6.0": "spacy_sm-3.6.0.tsv", "spacy_sm@3.8.0": "spacy_sm-3.8.0.tsv"}


def run(root: Path, *options: str) -> None:
    code, _out, err = run_cli("run", str(NER / "ner.toml"), "-w", str(root), "--ar-trials",
                              "200", *options)
    assert code == 0, err


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory, prefect_harness):
    """The sample run with the default scheme, with --scheme iob2, and with tiny shards."""
    tmp = tmp_path_factory.mktemp("ner")
    out = {"auto": tmp / "auto", "iob2": tmp / "iob2", "small": tmp / "small"}
    run(out["auto"])
    run(out["iob2"], "--scheme", "iob2")
    run(out["small"], "--shard-sents", "7")
    return out


def scores(root: Path) -> dict[tuple[str, str], dict]:
    rows = query(root, "select * from span_scores").to_dicts()
    return {(r["system"], r["type"]): r for r in rows}


def check_against(got: dict, expected: dict, scheme: str) -> int:
    """Every system and type of ``expected`` (overall = ALL): counts exactly, P/R/F1 as the
    reference prints them (percent, 4 decimals). Returns the number of rows checked."""
    checked = 0
    for system, name in FILES.items():
        for type_, figures in expected["systems"][name][scheme].items():
            if type_ == "token_accuracy":
                continue
            r = got[(system, "ALL" if type_ == "overall" else type_)]
            assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (
                figures["gold"], figures["pred"], figures["correct"]), (system, type_)
            for ours, theirs in (("precision", "precision"), ("recall", "recall"),
                                 ("f1", "f1")):
                assert round(100 * r[ours], 4) == pytest.approx(figures[theirs], abs=1e-9)
            checked += 1
    return checked


def test_default_scores_equal_conlleval(warehouses):
    got = scores(warehouses["auto"])
    assert check_against(got, EXPECTED, "conlleval") == 8
    assert {r["scheme"] for r in got.values()} == {"auto"}
    assert len(got) == 8       # ALL, PER, ORG, LOC per system: the mapping drops the rest


def test_strict_iob2_scores_equal_seqeval(warehouses):
    got = scores(warehouses["iob2"])
    assert check_against(got, EXPECTED, "seqeval_strict_iob2") == 8
    assert {r["scheme"] for r in got.values()} == {"iob2"}


def test_scores_equal_conlleval_pl_printout(warehouses):
    """conlleval.pl's own printout (2 decimals; per type it prints the predicted count)."""
    got = scores(warehouses["auto"])
    tags = {r["system"]: r for r in query(warehouses["auto"], "select * from span_tags")
            .to_dicts()}
    checked = 0
    for system, name in FILES.items():
        perl = EXPECTED["systems"][name]["conlleval_pl_output"]
        r = got[(system, "ALL")]
        assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (perl["gold"], perl["pred"],
                                                              perl["correct"])
        assert tags[system]["n_tokens"] == perl["tokens"]
        assert round(100 * tags[system]["token_accuracy"], 2) == perl["accuracy"]
        for figure in ("precision", "recall", "f1"):
            assert round(100 * r[figure], 2) == perl[figure]
        for type_, figures in perl["per_type"].items():
            r = got[(system, type_)]
            assert r["n_pred"] == figures["pred"]
            for figure in ("precision", "recall", "f1"):
                assert round(100 * r[figure], 2) == figures[figure], (system, type_, figure)
            checked += 1
    assert checked == 6


def sha256_table(source_md: str) -> dict[str, str]:
    """file -> sha256 from the table of the shared data's description."""
    return dict(re.findall(r"^\| `([^`]+)` \| [\d,]+ \| `([0-9a-f]{64})` \|$", source_md,
                           re.M))


def test_bundled_sample_is_the_shared_data():
    """The files the tests score are the shared NER data byte for byte: their sha256 are the
    ones its description lists (and, where the shared folder is present, equal to it)."""
    import hashlib

    listed = sha256_table((NER / "SOURCE.md").read_text())
    data = ["expected.json", "gold.iob2", "gold.tsv", "map.tsv", *FILES.values()]
    assert set(data) <= set(listed)
    for name in data:
        assert hashlib.sha256((NER / name).read_bytes()).hexdigest() == listed[name], name
    shared = REPO.parent / "shared" / "data" / "ner-uner-ewt"
    if shared.is_dir():
        for name in data:
            assert (shared / name).read_bytes() == (NER / name).read_bytes(), name


def test_token_accuracy_equals_conlleval(warehouses):
    tags = query(warehouses["auto"], "select * from span_tags").to_dicts()
    by = {r["system"]: r for r in tags}
    for system, name in FILES.items():
        want = EXPECTED["systems"][name]["conlleval"]["token_accuracy"]
        assert round(100 * by[system]["token_accuracy"], 4) == pytest.approx(want, abs=1e-9)
        assert by[system]["n_tokens"] == EXPECTED["tokens"]
    assert by["__key__"]["token_accuracy"] is None and by["__key__"]["detected"] == "iob2"
    assert by["__key__"]["n_spans"] == EXPECTED["gold_entities"]


def test_shard_size_changes_no_table(warehouses):
    a, b = digests(warehouses["auto"]), digests(warehouses["small"])
    assert {t for t in a if t.startswith("span")} == {
        "span_classes", "span_oracles", "span_pairs", "span_scores", "span_tags",
        "span_tokens", "span_transitions", "spans"}
    assert a == b


def test_classes_agree_with_scores_and_pairs(warehouses):
    root = warehouses["auto"]
    cls = query(root, """select system, count(*) filter (where cls = 'correct') as correct,
        count(*) filter (where in_key) as key_spans,
        count(*) filter (where cls = 'spurious') as spurious from span_classes group by 1""")
    sc = scores(root)
    for r in cls.to_dicts():
        assert r["correct"] == sc[(r["system"], "ALL")]["n_correct"]
        assert r["key_spans"] == EXPECTED["gold_entities"]
    pair = query(root, "select * from span_pairs where sys1 < sys2").row(0, named=True)
    spurious_union = query(root, """select count(*) as n from (select distinct sent, start,
        "end", type from span_classes where cls = 'spurious')""")["n"][0]
    assert pair["n_units"] == EXPECTED["gold_entities"] + spurious_union
    trans = query(root, f"""select sum(count) filter (where c1 != c2) as d, sum(count) as n
        from span_transitions where type = 'ALL' and sys1 = '{pair["sys1"]}'
        and sys2 = '{pair["sys2"]}'""").row(0, named=True)
    assert (trans["d"], trans["n"]) == (pair["n_diff"], pair["n_units"])
    history = query(root, "select * from history order by position").to_dicts()
    assert [h["version"] for h in history] == ["3.6.0", "3.8.0"]
    assert history[1]["new_errors"] == query(
        root, "select new_errors from span_pairs where sys1 = 'spacy_sm@3.6.0'")["new_errors"][0]


def ill_formed(tmp: Path) -> Path:
    """The 3.8.0 output with every third B- written I- (an I-X after O or another type)."""
    lines = (NER / FILES["spacy_sm@3.8.0"]).read_text().split("\n")
    out, k = [], 0
    for line in lines:
        if "\tB-" in line:
            k += 1
            if k % 3 == 0:
                line = line.replace("\tB-", "\tI-")
        out.append(line)
    path = tmp / "ill.tsv"
    path.write_text("\n".join(out))
    return path


def seqeval_figures(system: Path, strict: bool) -> tuple[int, int, int]:
    """(gold, predicted, correct) spans by seqeval on the mapped tags."""
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, Entities

    mapping = dict(line.split("\t") for line in (NER / "map.tsv").read_text().splitlines())

    def read(path: Path, mapped: bool) -> list[list[str]]:
        sents = [[t.split("\t")[1] for t in block.split("\n") if t]
                 for block in path.read_text().strip().split("\n\n")]
        if not mapped:
            return sents
        return [[t if t == "O" else "O" if mapping[t[2:]] == "O" else f"{t[:2]}{mapping[t[2:]]}"
                 for t in s] for s in sents]

    gold, pred = read(NER / "gold.tsv", False), read(system, True)

    def entities(seqs: list[list[str]]) -> set:
        if strict:
            return {e.to_tuple() for s in Entities(seqs, IOB2).entities for e in s}
        return {(k, *e) for k, s in enumerate(seqs) for e in get_entities(s)}

    g, p = entities(gold), entities(pred)
    return len(g), len(p), len(g & p)


def test_ill_formed_output_conlleval_vs_strict_equal_seqeval(tmp_path, cli):
    bad = ill_formed(tmp_path)
    got = {}
    for scheme in ("auto", "iob2"):
        root = tmp_path / scheme
        code, _, err = cli("run", "--task", "ner", "--corpus", "ill", "--key",
                           str(NER / "gold.tsv"), "--system", f"ill={bad}", "--map",
                           str(NER / "map.tsv"), "--scheme", scheme, "--ar-trials", "50",
                           "-w", str(root))
        assert code == 0, err
        assert "ill-formed" in err           # the notice says how the two schemes differ
        r = query(root, "select * from span_scores where type = 'ALL'").row(0, named=True)
        got[scheme] = (r["n_gold"], r["n_pred"], r["n_correct"])
    assert got["auto"] == seqeval_figures(bad, strict=False)
    assert got["iob2"] == seqeval_figures(bad, strict=True)
    assert got["auto"][1] > got["iob2"][1]       # strict drops the spans that start with I-


def test_cli_options_equal_the_run_file(tmp_path, cli, warehouses):
    root = tmp_path / "wh"
    args = ["run", "--task", "ner", "--corpus", "uner", "--key", str(NER / "gold.iob2"),
            "--map", str(NER / "map.tsv"), "--ar-trials", "200", "-w", str(root)]
    for name, f in FILES.items():
        args += ["--system", f"{name}={NER / f}"]
    code, out, err = cli(*args)
    assert code == 0, err
    assert re.search(r"spacy_sm@3\.8\.0\s*│\s*55\.55\s*│\s*61\.70\s*│\s*58\.46", out), out
    a, b = digests(root), digests(warehouses["auto"])
    assert {t: a[t] for t in a if t != "systems"} == {t: b[t] for t in b if t != "systems"}


BAD = {
    # name: (how the system file is changed, expected phrase, line)
    "form": (lambda t: t.replace("morcillas\tO", "morcilla\tO", 1),
             "form 'morcilla' differs from the key's 'morcillas'", 5),
    "tag": (lambda t: t.replace("get\tO", "get\tX-LOC", 1), "tag 'X-LOC' is not", 4),
    "columns": (lambda t: t.replace("get\tO", "get\tO\tO", 1), "line has 3 columns", 4),
    "sentence_missing": (lambda t: t.split("\n\n", 1)[1], "has 2000 sentences but the key",
                         None),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_system_is_one_line_and_leaves_the_warehouse(tmp_path, cli, name):
    change, phrase, line = BAD[name]
    root = tmp_path / "wh"
    run(root)
    before = snapshot(root)
    path = tmp_path / "bad.tsv"
    good = (NER / FILES["spacy_sm@3.8.0"]).read_text()
    path.write_text(change(good))
    assert path.read_text() != good
    code, out, err = cli("run", "--task", "ner", "--corpus", "uner", "--key",
                         str(NER / "gold.iob2"), "--system", f"bad={path}", "-w", str(root))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"sysdiff: error: {path}" + (f":{line}:" if line else ":"))
    assert phrase in lines[0]
    assert "Traceback" not in out + err
    assert snapshot(root) == before


def test_bad_options_are_usage_errors(tmp_path, cli):
    key = str(NER / "gold.tsv")
    for args, phrase in (
            (["--scheme", "bio"], "unknown scheme 'bio'"),
            (["--map", "nonsense"], "expected SYSTEM:OLD=NEW"),
            (["--format", "conllu"], "unknown input format 'conllu' for task ner")):
        code, _, err = cli("run", "--task", "ner", "--corpus", "c", "--key", key, "--system",
                           f"a={key}", "-w", str(tmp_path / "wh"), *args)
        assert code == 2 and phrase in err, err
    code, _, err = cli("run", "--task", "pos", "--corpus", "c", "--key", key, "--system",
                       f"a={key}", "--scheme", "iob2", "-w", str(tmp_path / "wh"))
    assert code == 2 and "--scheme applies to task ner" in err
    assert not (tmp_path / "wh").exists()


def test_show_examples_and_check(warehouses, cli):
    w = ["-w", str(warehouses["auto"])]
    code, out, _ = cli("show", "span_scores", *w)
    assert code == 0 and "57.83" in out and "96.00" in out          # F1 and token accuracy
    code, out, _ = cli("show", "span_classes", *w)
    assert code == 0 and "boundary" in out
    code, out, _ = cli("show", "span_pairs", "--sys1", "spacy_sm@3.6.0", "--sys2",
                       "spacy_sm@3.8.0", "--view", "PER", *w)
    assert code == 0 and "Difference:" in out and "top 5 transitions (type PER)" in out
    code, out, _ = cli("show", "span_oracles", *w)
    assert code == 0 and "66.05" in out
    code, out, _ = cli("show", "history", *w)
    assert code == 0 and "58.46" in out
    code, out, _ = cli("examples", "--sys1", "spacy_sm@3.6.0", "--sys2", "spacy_sm@3.8.0",
                       "--class", "correction", "--l1", "boundary", "--l2", "correct",
                       "--format", "json", *w)
    rows = json.loads(out)
    assert code == 0 and rows and all(r["c1"] == "boundary" and r["c2"] == "correct"
                                      for r in rows)
    assert all("[" in r["sentence"] and "]" in r["sentence"] for r in rows)
    n = query(warehouses["auto"], """select count from span_transitions where type = 'ALL'
        and sys1 = 'spacy_sm@3.6.0' and sys2 = 'spacy_sm@3.8.0' and c1 = 'boundary'
        and c2 = 'correct'""")["count"][0]
    code, out, _ = cli("examples", "--sys1", "spacy_sm@3.6.0", "--sys2", "spacy_sm@3.8.0",
                       "--class", "correction", "--l1", "boundary", "--l2", "correct",
                       "--limit", "-1", "--format", "json", *w)
    assert len(json.loads(out)) == n       # the drill-down lists exactly the cell's units
    code, out, err = cli("check", "--candidate", "spacy_sm@3.8.0", "--max-new-errors", "100",
                         *w)
    assert code == 1 and "160 new errors (span units)" in err
    code, out, err = cli("check", "--candidate", "spacy_sm@3.8.0", "--view", "PER",
                         "--min-delta", "2", *w)
    assert code == 0 and "span F1 (PER)" in out
    code, out, err = cli("show", "span_scores", "--view", "DATE", *w)
    assert code == 2 and "unknown type 'DATE'" in err


def test_report_has_a_span_section(warehouses, tmp_path, cli):
    out = tmp_path / "r.html"
    code, _, err = cli("report", "-o", str(out), "-w", str(warehouses["auto"]))
    assert code == 0, err
    html = out.read_text()
    assert 'id="uner-spans"' in html
    for text in ("Span scores", "57.83", "Span classes", "Transitions", "oracle recall"):
        assert text in html, text
    section = html[html.index('id="uner-spans"'):]
    matrix = re.search(r'data-type="ALL" data-sys1="spacy_sm@3.6.0" data-sys2="spacy_sm@3.8.0"'
                       r"(.*?)</table>", section, re.S).group(1)
    shown = {(a, b): int(n) for a, b, n in re.findall(
        r'data-c1="(\w+)" data-c2="(\w+)"[^>]*>(\d+)</td>', matrix)}
    stored = query(warehouses["auto"], """select c1, c2, count from span_transitions where
        type = 'ALL' and sys1 = 'spacy_sm@3.6.0' and sys2 = 'spacy_sm@3.8.0'""").rows()
    assert shown == {(a, b): n for a, b, n in stored}
    # the units behind the largest cell, with the sentence and the unit in brackets
    top = max((n, a, b) for (a, b), n in shown.items() if a != b)
    assert f"{top[1]} → {top[2]}</span>: {top[0]}" in section
    assert section.count('class="span-examples"') == 6


def test_unchanged_rerun_keeps_every_file(warehouses, prefect_harness):
    root = warehouses["small"]
    before = snapshot(root)
    run(root, "--shard-sents", "7")
    assert snapshot(root) == before
    frame = pl.read_parquet(sorted((root / "tables" / "spans").rglob("*.parquet"))[0])
    assert frame.columns == ["corpus", "system", "sent", "start", "end", "type", "text"]


def test_examples_keep_two_units_that_look_alike_apart(tmp_path, cli):
    """Two adjacent key spans 'New York' that one system misses and the other covers with
    one span: two units with the same type, text and classes, listed once each."""
    words = ["I", "love", "New", "York", "New", "York", "."]
    files = {"key": ["O", "O", "B-LOC", "I-LOC", "B-LOC", "I-LOC", "O"],
             "a": ["O"] * 7, "b": ["O", "O", "B-LOC", "I-LOC", "I-LOC", "I-LOC", "O"]}
    paths = {}
    for name, tags in files.items():
        paths[name] = tmp_path / f"{name}.tsv"
        paths[name].write_text("".join(f"{w}\t{t}\n" for w, t in zip(words, tags, strict=True))
                               + "\n")
    root = tmp_path / "wh"
    code, _, err = cli("run", "--task", "ner", "--corpus", "ny", "--key", str(paths["key"]),
                       "--system", f"a={paths['a']}", "--system", f"b={paths['b']}",
                       "--ar-trials", "10", "-w", str(root))
    assert code == 0, err
    code, out, err = cli("examples", "--sys1", "a", "--sys2", "b", "--class", "changed_error",
                         "--format", "json", "-w", str(root))
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["c1"], r["c2"], r["b"]) for r in rows] == [
        ("missed", "boundary", "boundary (LOC 3-6)")] * 2
    assert [r["sentence"] for r in rows] == ["I love [New York] New York .",
                                             "I love New York [New York] ."]


def test_example_positions_are_the_spans_table_s_plus_one(warehouses, cli):
    """An example's span ``(PER 20-20)`` gives 1-based key token positions, first and last
    (as ``examples --help`` says); the ``spans`` table stores the same span 0-based."""
    root = warehouses["auto"]
    a, b = "spacy_sm@3.6.0", "spacy_sm@3.8.0"
    code, out, err = cli("examples", "--sys1", a, "--sys2", b, "--class", "correction",
                         "--limit", "-1", "--format", "json", "-w", str(root))
    assert code == 0, err
    seen = 0
    for r in json.loads(out):
        m = re.fullmatch(r"\w+ \((\S+) (\d+)-(\d+)\)", r[a])
        if m is None:  # sys1 has no span there
            continue
        kind, first, last = m.group(1), int(m.group(2)), int(m.group(3))
        texts = query(root, f"""select s.text from spans s join span_tokens t
            on t.corpus = s.corpus and t.sent = s.sent and t.system = '__key__'
            and t.id = s.start + 1 and t.form = split_part(s.text, ' ', 1)
            where s.system = '{a}' and s.type = '{kind}' and s.start = {first - 1}
            and s."end" = {last - 1}""")["text"].to_list()
        plain = r["sentence"].replace("[", "").replace("]", "")
        assert any(f" {t} " in f" {plain} " for t in texts), (r, texts)
        seen += 1
    assert seen >= 5
