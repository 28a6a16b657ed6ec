"""Systems tokenised otherwise than the key (issue 14, METRICS 4): aligned on the characters
of the text as the CoNLL 2018 script does; its every line on the shared raw-text outputs, the
udtools implementation on random retokenisations, and the comparative tables on top."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from sysdiff.transforms.conll18 import METRICS
from tests.conftest import SEQUOIA, run_cli, snapshot
from tests.retokenise import retokenise
from tests.test_conll18 import parse_expected
from tests.test_scale import first_sentences

RAW = {"spacy_md_raw@3.8.0": "fr_core_news_md-3.8.0.raw.conllu",
       "spacy_sm_raw@3.8.0": "fr_core_news_sm-3.8.0.raw.conllu"}
SAME = {"spacy_md@3.8.0": "fr_core_news_md-3.8.0", "spacy_sm@3.8.0": "fr_core_news_sm-3.8.0"}
SEGMENTS = ("Tokens", "Sentences", "Words")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, prefect_harness) -> Path:
    """The bundled mixed run: two parsers on the key's words, two from raw text."""
    root = tmp_path_factory.mktemp("mixed") / "wh"
    code, _, err = run_cli("run", str(SEQUOIA / "mixed.toml"), "-w", str(root),
                           "--ar-trials", "200")
    assert code == 0, err
    return root


def conll18_printed(root: Path, system: str) -> dict[str, list[str]]:
    """A system's ``conll18`` rows as the official script prints them (blank AligndAcc for
    the segmentation metrics)."""
    rows = query(root, "select metric, precision, recall, f1, aligned_accuracy from conll18 "
                       f"where system = '{system}'").rows()
    return {m: [f"{100 * v:.2f}" if v is not None else "" for v in values]
            for m, *values in rows}


@pytest.mark.parametrize("system", sorted(RAW))
def test_raw_text_outputs_reproduce_every_official_line(system, mixed):
    expected = parse_expected(SEQUOIA / "raw" / "expected-conll18.txt")[RAW[system]]
    got = conll18_printed(mixed, system)
    assert list(expected) == list(SEGMENTS) + list(METRICS)
    assert got == expected


@pytest.mark.parametrize("system", sorted(SAME))
def test_identically_tokenised_systems_score_as_before(system, mixed):
    """On the key's own words: every metric as the official script printed it for the
    same file, and the segmentation metrics at 100."""
    expected = parse_expected(SEQUOIA / "expected-conll18-ud-eval.txt")[SAME[system]]
    got = conll18_printed(mixed, system)
    assert {m: got[m] for m in METRICS} == {m: expected[m] for m in METRICS}
    assert all(got[m] == ["100.00", "100.00", "100.00", ""] for m in SEGMENTS)


def test_blank_metric_is_stored_but_not_shown(mixed):
    """XPOS is '_' in every key word: the row the official script prints is kept with
    ``key_data`` false, and ``show conll18`` leaves it out with one notice."""
    flags = dict(query(mixed, "select metric, bool_and(key_data) from conll18 group by 1").rows())
    assert not flags["XPOS"] and not flags["AllTags"]  # AllTags compares XPOS too
    assert flags["UPOS"] and flags["Tokens"] and flags["LAS"]
    code, out, err = run_cli("show", "conll18", "-w", str(mixed))
    assert code == 0, err
    assert "XPOS" not in out and "Tokens" in out and "BLEX" in out
    assert "xpos" in err.lower()


def test_unaligned_key_words_are_errors_in_every_view(mixed):
    """A raw system's UPOS accuracy over the key's words is the official UPOS recall (an
    unaligned key word is wrong), and its unaligned words carry the ``<unaligned>`` label."""
    for system in RAW:
        acc = query(mixed, "select n_correct, n_units from scores where view = 'upos' and "
                           f"system = '{system}'").row(0)
        recall = query(mixed, "select correct, gold_total from conll18 where metric = 'UPOS' "
                              f"and system = '{system}'").row(0)
        assert acc == recall
        unaligned = query(mixed, "select count(*) from aligned where not aligned and "
                                 f"system = '{system}'")[0, 0]
        words = query(mixed, "select gold_total - correct from conll18 where metric = "
                             f"'Words' and system = '{system}'")[0, 0]
        assert unaligned == words > 0
        labelled = query(mixed, "select sum(count) from changes where view = 'upos' and "
                                f"sys1 = 'spacy_md@3.8.0' and sys2 = '{system}' and "
                                "l2 = '<unaligned>'")[0, 0]
        assert labelled == unaligned


def test_pairs_count_the_words_segmented_differently(mixed):
    """Every pair of the four systems in every view; ``seg_diff`` is the number of the
    view's key words (punctuation left out where the view leaves it out) aligned in one
    system of the pair only, read from the ``aligned`` table."""
    systems = sorted([*RAW, *SAME])
    views = query(mixed, "select count(distinct (view, punct)) from scores")[0, 0]
    assert query(mixed, "select count(*) from pairs")[0, 0] == views * 12
    key = {(s, i): u for s, i, u in query(mixed, "select sent, id, upos from units where "
                                                 "system = '__key__' and kind = 0").rows()}
    aligned = {s: set(query(mixed, f"select sent, id from aligned where system = '{s}' and "
                                   "aligned").rows()) for s in RAW}
    aligned |= {s: set(key) for s in SAME}
    for a in systems:
        for b in systems:
            if a == b:
                continue
            for punct, seg in query(mixed, f"select distinct punct, seg_diff from pairs where "
                                           f"sys1 = '{a}' and sys2 = '{b}'").rows():
                differ = {w for w in aligned[a] ^ aligned[b] if punct or key[w] != "PUNCT"}
                assert seg == len(differ), (a, b, punct)
    assert query(mixed, "select count(*) from pairs where seg_diff > 0 and sys1 like '%raw%' "
                        "and sys2 like '%raw%'")[0, 0] == 0  # one tokeniser, two models


def test_pair_invariant_holds_across_tokenisations(mixed):
    """acc2 - acc1 = (corrections - new errors) / |T| for pairs with a raw-text system."""
    rows = query(mixed, "select p.view, p.corrections, p.new_errors, p.n_units, a.n_correct "
                        "as c1, b.n_correct as c2, a.n_units as n from pairs p join scores a "
                        "using (view, punct) join scores b using (view, punct) where "
                        "a.system = p.sys1 and b.system = p.sys2 and p.sys2 like '%raw%'").rows()
    assert rows
    for _view, corr, new, n_units, c1, c2, n in rows:
        assert n_units == n and c2 - c1 == corr - new


def test_examples_show_each_systems_own_tokens(mixed):
    """A key word under a multiword token is shown with the raw system's own token."""
    code, out, err = run_cli("examples", "-w", str(mixed), "--view", "upos", "--sys1",
                             "spacy_md@3.8.0", "--sys2", "spacy_md_raw@3.8.0", "--class",
                             "new_error", "--l2",
                             "<unaligned>", "--gold", "ADP", "-f", "csv", "--limit", "5")
    assert code == 0, err
    lines = out.splitlines()
    header = lines[0].split(",")
    assert "form2" in header and len(lines) == 6
    forms = {line.split(",")[header.index("form2")] for line in lines[1:]}
    assert forms <= {"du", "des", "au", "aux", "Du", "Des", "Au", "Aux"}, forms


def test_report_has_a_segmentation_section(mixed, tmp_path):
    out = tmp_path / "r.html"
    code, _, err = run_cli("report", "-w", str(mixed), "-o", str(out))
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    assert 'id="sequoia-mixed-segmentation"' in page
    assert "&lt;unaligned&gt;" in page and "segmented differently" in page


# ----------------------------------------------------------- against udtools (conll18 v2)

@pytest.fixture(scope="module")
def retokenised(tmp_path_factory, prefect_harness):
    """60 key sentences, one system on the key's words and three retokenisations of
    parsers (multiword tokens collapsed, words split, sentences joined), run through
    ``sysdiff run``."""
    tmp = tmp_path_factory.mktemp("retok")
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 60)
    files = {"same": first_sentences(SEQUOIA / "seqsm_local-ud2.16.conllu",
                                     tmp / "same.conllu", 60)}
    for k, (src, join_every, split) in enumerate([
            ("fr_core_news_md-3.8.0", 2, 0.05), ("fr_core_news_sm-3.8.0", 0, 0.2),
            ("seqsm_local-ud2.8", 4, 0.0)]):
        cut = first_sentences(SEQUOIA / f"{src}.conllu", tmp / f"{src}.conllu", 60)
        files[f"r{k}"] = retokenise(cut, tmp / f"r{k}.conllu", seed=k, join_every=join_every,
                                    split_rate=split)
    root = tmp / "wh"
    code, _, err = run_cli("run", "--key", str(key), "--corpus", "c", "--task", "dep",
                           *[f"--system={n}={p}" for n, p in files.items()], "-w", str(root),
                           "--ar-trials", "50")
    assert code == 0, err
    return key, files, root


def test_random_retokenisations_equal_udtools(retokenised):
    """Every count and score equals udtools' ``udeval`` (the CoNLL 2018 script's later
    version) on the same files."""
    from udtools import udeval

    key, files, root = retokenised
    gold = udeval.load_conllu_file(str(key))
    modes = dict(query(root, "select system, alignment from systems").rows())
    assert modes == {"__key__": "identical", "same": "identical", "r0": "characters",
                     "r1": "characters", "r2": "characters"}
    for name, path in files.items():
        ref = udeval.evaluate(gold, udeval.load_conllu_file(str(path)))
        rows = query(root, "select metric, correct, gold_total, system_total, precision, "
                           f"recall, f1, aligned_accuracy from conll18 where system = '{name}'")
        for metric, correct, gold_total, system_total, p, r, f1, acc in rows.rows():
            want = ref[metric]
            assert (correct, gold_total, system_total) == (
                want.correct, want.gold_total, want.system_total), (name, metric)
            assert (p, r, f1) == pytest.approx((want.precision, want.recall, want.f1),
                                               abs=1e-12), (name, metric)
            if want.aligned_accuracy is not None and metric not in SEGMENTS:
                assert acc == pytest.approx(want.aligned_accuracy, abs=1e-12), (name, metric)


def test_same_text_merged_or_split_word_is_aligned(tmp_path, prefect_harness):
    """The word check's merged and split words (tests/test_bad_inputs.py) have the key's
    text: they are aligned, and the words they change are the only errors."""
    from tests.test_bad_inputs import GOOD, MISMATCHES

    key = tmp_path / "key.conllu"
    key.write_text(GOOD, encoding="utf-8")
    for case, wrong in (("word_merged", 2), ("word_split", 1)):
        path = tmp_path / f"{case}.conllu"
        path.write_text(MISMATCHES[case][0], encoding="utf-8")
        root = tmp_path / case
        code, _, err = run_cli("run", "--key", str(key), "--system", f"s={path}",
                               "--corpus", "c", "--task", "pos", "-w", str(root))
        assert code == 0, err
        assert query(root, "select alignment from systems where system = 's'")[0, 0] == \
            "characters"
        n_units, n_correct = query(root, "select n_units, n_correct from scores where view "
                                         "= 'upos' and system = 's'").row(0)
        assert (n_units, n_units - n_correct) == (6, wrong)


def test_text_difference_names_both_strings(tmp_path, prefect_harness):
    """A system whose characters differ: file:line of the first differing character, the
    key's line, both strings; exit 2; the warehouse as it was."""
    key = tmp_path / "key.conllu"
    first_sentences(SEQUOIA / "key.conllu", key, 5)
    raw = tmp_path / "raw.conllu"
    text = (SEQUOIA / "raw" / "fr_core_news_md-3.8.0.raw.conllu").read_text(encoding="utf-8")
    lines = text.split("\n\n")[:6]
    raw.write_text("\n\n".join(lines).replace("\tconsommation\t", "\tconsomation\t", 1) + "\n\n",
                   encoding="utf-8")
    root = tmp_path / "wh"
    code, _, err = run_cli("run", "--key", str(key), "--system", f"ok={key}", "--corpus", "c",
                           "-w", str(root))
    assert code == 0, err
    before = snapshot(root)
    code, _, err = run_cli("run", "--key", str(key), "--system", f"raw={raw}", "--corpus",
                           "c", "-w", str(root))
    assert code == 2 and err.count("\n") == 1, err
    line = next(k for k, t in enumerate(raw.read_text().splitlines(), 1) if "\tconsomation\t" in t)
    assert f"{raw}:{line}: the text differs from the key's at character" in err
    assert "consomation" in err and "consommation" in err and f"({key}:" in err
    assert snapshot(root) == before


def test_keep_going_skips_a_text_difference_without_a_trace(tmp_path, prefect_harness):
    """With --keep-going the system whose text differs is skipped (found after its words
    were staged) and nothing of it is committed: no units, sentences or systems row."""
    key = tmp_path / "key.conllu"
    first_sentences(SEQUOIA / "key.conllu", key, 5)
    raw = tmp_path / "raw.conllu"
    text = (SEQUOIA / "raw" / "fr_core_news_md-3.8.0.raw.conllu").read_text(encoding="utf-8")
    raw.write_text("\n\n".join(text.split("\n\n")[:6]).replace("\tconsommation\t",
                                                               "\tconsomation\t", 1) + "\n\n",
                   encoding="utf-8")
    root = tmp_path / "wh"
    code, _, err = run_cli("run", "--key", str(key), "--system", f"ok={key}", "--system",
                           f"raw={raw}", "--corpus", "c", "--keep-going", "-w", str(root))
    assert code == 3, err
    assert "the text differs from the key's" in err
    for table in ("units", "systems", "vocab"):
        systems = query(root, f"select distinct system from {table}")["system"].to_list()
        assert sorted(systems) == ["__key__", "ok"], table
    # a system read on the key's words keeps no sentences of its own: the view shows the key's
    assert query(root, "select distinct system from stored.sents")["system"].to_list() == [
        "__key__"]
    assert sorted(query(root, "select distinct system from sents")["system"].to_list()) == [
        "__key__", "ok"]
