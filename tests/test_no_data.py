"""No number without data (issue 20, point 6): a view without an evaluable unit, a metric
with a zero denominator, a column a system lacks (``missing``) or a key without entities is
NULL in the tables, "—" (or "not evaluated") wherever people read it, and no gate passes on
it; ``--task`` is inferred from the key's format, never silently ``dep``."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

from sysdiff.flows.queries import query
from sysdiff.flows.report import build_report
from sysdiff.flows.spec import corpus_spec, load_config
from sysdiff.schemas.errors import InputError
from sysdiff.transforms import reduce
from sysdiff.transforms.counts import Counts
from sysdiff.transforms.span_tables import prf
from tests import helpers

# ------------------------------------------------------------------------------ inputs


def conllu(*sentences: list[tuple]) -> str:
    """CoNLL-U of sentences of (form, lemma, upos, head, deprel) words."""
    out = []
    for k, words in enumerate(sentences, start=1):
        out.append(f"# sent_id = {k}")
        out += [f"{i}\t{f}\t{lem}\t{u}\t_\t_\t{h}\t{d}\t_\t_"
                for i, (f, lem, u, h, d) in enumerate(words, start=1)]
        out.append("")
    return "\n".join(out) + "\n"


PUNCT = [[(",", ",", "PUNCT", 0, "root"), (".", ".", "PUNCT", 1, "punct")],
         [("!", "!", "PUNCT", 0, "root")]]
PUNCT_B = [[(",", ",", "PUNCT", 0, "root"), (".", ".", "PUNCT", 0, "punct")],
           [("!", "!", "PUNCT", 0, "root")]]
WORDS = [[("Le", "le", "DET", 2, "det"), ("chat", "chat", "NOUN", 3, "nsubj"),
          ("dort", "dormir", "VERB", 0, "root")]]
NO_HEADS = [[(f, lem, u, "_", "_") for f, lem, u, _h, _d in WORDS[0]]]
NO_LEMMAS = [[(f, "_", u, h, d) for f, _lem, u, h, d in WORDS[0]]]


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def run(cli, tmp_path, task: str | None, key: str, systems: dict[str, str], suffix: str,
        corpus: str = "c"):
    """``sysdiff run`` of a key and systems given as text; (warehouse, status, out, err)."""
    wh = tmp_path / "wh"
    args = ["run", "--corpus", corpus, "--key", str(write(tmp_path / f"key{suffix}", key)),
            "-w", str(wh), "--ar-trials", "50"]
    for name, text in systems.items():
        args += ["--system", f"{name}={write(tmp_path / f'{name}{suffix}', text)}"]
    if task:
        args += ["--task", task]
    code, out, err = cli(*args)
    return wh, code, out, err


def has_zero(text: str) -> bool:
    """A 0.00 (not 100.00) in ``text``."""
    return re.search(r"(?<![\d.])0\.00", text) is not None


def summary_cells(out: str, system: str) -> dict[str, str]:
    """The cells of one system's row of a run summary (a rich table), by column name."""
    head = next(ln for ln in out.splitlines() if ln.startswith("┃"))
    head = [c.strip() for c in head.strip("┃ ").split("┃")]
    rows = [ln for ln in out.splitlines() if ln.startswith("│")]
    row = next(ln for ln in rows if ln.split("│")[1].strip() == system)
    return dict(zip(head, (c.strip() for c in row.strip("│ ").split("│")), strict=True))


# ------------------------------------------------------------------------------ transforms


def test_a_ratio_without_denominator_is_null():
    """The reduce step: accuracy and sentence exact match of a view with no unit are NULL
    (not 0, and not 100 % of sentences 'exact' with nothing in them)."""
    c = Counts(n_units=0, n_sents=2, correct=np.zeros(2, np.int64),
               exact=np.full(2, 2, np.int64), gold_n=np.zeros(3, np.int64),
               labels=np.zeros((2, 3), np.int64), bucket_units={}, bucket_correct={},
               pairs=None, oracle=None, majority=None)
    df = reduce.scores_frame(c, ["a", "b"])
    assert df["accuracy"].to_list() == [None, None]
    assert df["sent_exact"].to_list() == [None, None]
    assert df["n_units"].to_list() == [0, 0] and df["n_sents_exact"].to_list() == [2, 2]


def test_a_missing_system_has_null_scores_and_deltas():
    """In memory (helpers.evaluate): a system whose LEMMA is all '_' where the key has
    lemmas is flagged missing; its accuracy, per-label accuracy, the deltas and p-values of
    its pairs and the oracle of itself alone are NULL; the counts stay."""
    key = helpers.words(["DET", "NOUN"]).with_columns(lemma=pl.Series(["le", "chat"]))
    good = key.clone()
    blank = key.with_columns(lemma=pl.lit("_"))
    t = helpers.evaluate("lemma", key, {"good": good, "blank": blank}, punct=True)
    scores = helpers.as_dict(t["scores"], "system", "accuracy")
    assert scores == {"good": 1.0, "blank": None}
    assert helpers.as_dict(t["scores"], "system", "missing") == {"good": False, "blank": True}
    assert helpers.as_dict(t["scores"], "system", "n_correct") == {"good": 2, "blank": 0}
    assert t["labels"].filter(pl.col("system") == "blank")["accuracy"].to_list() == [None] * 2
    pair = t["pairs"].row(0, named=True)
    assert (pair["delta_acc"], pair["mcnemar_p"], pair["ar_p"]) == (None, None, None)
    assert pair["n_diff"] == 2 and pair["diff"] == 1.0
    alone = t["oracles"].filter(pl.col("systems") == ["blank"]).row(0, named=True)
    assert (alone["accuracy"], alone["gain"]) == (None, None)


def test_span_scores_without_key_spans_are_null():
    """P is NULL without a predicted span, R and F1 without a key span; with key spans and
    no prediction F1 is 0 (data: nothing found)."""
    p, r, f = prf(np.array([0, 0, 1]), np.array([0, 3, 2]), np.array([1, 0, 2]))
    assert np.isnan(r[0]) and np.isnan(f[0]) and p[0] == 0.0
    assert np.isnan(p[1]) and r[1] == 0.0 and f[1] == 0.0
    assert (p[2], r[2], f[2]) == (0.5, 0.5, 0.5)


# ------------------------------------------------------------------------------ views


def test_all_punctuation_key_stores_null_and_fails_every_gate(cli, tmp_path):
    """A key whose every word is punctuation: LAS (no punct) has no unit: NULL in scores,
    '—' in the summary and `show`, and `check` fails (exit 1) with one line per gate, each
    naming its gate."""
    wh, code, out, err = run(cli, tmp_path, "dep", conllu(*PUNCT),
                             {"a": conllu(*PUNCT), "b": conllu(*PUNCT_B)}, ".conllu")
    assert code == 0, err
    assert "LAS (no punct): the key has no evaluable unit" in err
    row = query(wh, "select n_units, accuracy, sent_exact, ci_low, ci_high from scores where "
                    "view = 'las' and not punct and system = 'a'").row(0)
    assert row == (0, None, None, None, None)
    pair = query(wh, "select diff, delta_acc, mcnemar_p, ar_p, delta_ci_low, delta_ci_high, "
                     "bootstrap_p from pairs where view = 'las' and not punct and sys1 = 'a'"
                 ).row(0)
    assert pair == (None,) * 7
    cells = summary_cells(out, "b")
    assert cells["LAS (no punct) %"] == "—" and cells["LAS (punct) %"] == "66.67"
    code, shown, err = cli("show", "scores", "--view", "las", "-w", str(wh))
    assert code == 0 and not has_zero(shown) and "—" in shown
    assert "not evaluated: LAS (no punct): corpus 'c' has no evaluable unit" in err
    code, shown, err = cli("show", "gains", "-w", str(wh))  # was a ZeroDivisionError
    assert code == 0 and not has_zero(shown) and "—" in shown, err
    code, out, err = cli("check", "--view", "las", "--baseline", "a", "--candidate", "b",
                         "--min-delta", "0", "--max-new-errors", "0", "-w", str(wh))
    assert code == 1 and not out
    lines = err.splitlines()
    assert len(lines) == 2 and all(x.startswith("sysdiff check: FAILED: not evaluated: LAS (no "
                                                "punct)") for x in lines), err
    assert lines[0].endswith("no gate passes without data (--max-new-errors 0)")
    assert lines[1].endswith("no gate passes without data (--min-delta +0.00)")
    code, out, err = cli("check", "--view", "las", "--baseline", "a", "--candidate", "b",
                         "--require-significant", "-w", str(wh))
    assert code == 1 and not out
    lines = err.splitlines()
    assert lines and all(x.startswith("sysdiff check: FAILED: not evaluated: LAS (no punct)")
                         for x in lines), err
    code, out, _ = cli("check", "--view", "las", "--baseline", "a", "--candidate", "b",
                       "--min-delta", "0", "--max-new-errors", "0", "--json", "-w", str(wh))
    doc = json.loads(out)
    assert code == 1 and not doc["passed"]
    assert [(g["passed"], g["value"]) for g in doc["gates"]] == [(False, None), (False, None)]
    code, _out, err = cli("check", "--view", "las", "--punct", "--baseline", "a",
                          "--candidate", "b", "--max-new-errors", "1", "-w", str(wh))
    assert code == 0, err  # with punctuation the view has units: the gate is evaluated


def test_key_without_heads_has_no_conll18_las(cli, tmp_path):
    """--task dep on a key without heads: the tree metrics of table conll18 are NULL (the
    official script cannot read such a key) and the run summary shows '—'."""
    wh, code, out, err = run(cli, tmp_path, "dep", conllu(*NO_HEADS),
                             {"a": conllu(*WORDS)}, ".conllu")
    assert code == 0, err
    assert summary_cells(out, "a")["CoNLL18 LAS F1 %"] == "—"
    rows = dict(query(wh, "select metric, f1 from conll18").rows())
    assert rows["UPOS"] == 1.0
    assert all(rows[m] is None for m in ("UAS", "LAS", "CLAS", "MLAS", "BLEX"))


def test_system_without_lemmas_is_not_evaluated_anywhere(cli, tmp_path):
    """A system without LEMMA: NULL scores, '—' in the summary, `show` and the report, no
    0 -> 0 history line, and a gate on the view fails."""
    wh, code, out, err = run(cli, tmp_path, "dep", conllu(*WORDS),
                             {"p@1": conllu(*NO_LEMMAS), "p@2": conllu(*NO_LEMMAS),
                              "full@1": conllu(*WORDS)}, ".conllu")
    assert code == 0, err
    assert "flagged 'missing'" in err
    assert summary_cells(out, "p@1")["LEMMA %"] == "—"
    assert summary_cells(out, "full@1")["LEMMA %"] == "100.00"
    rows = query(wh, "select system, accuracy, missing from scores where view = 'lemma'").rows()
    assert sorted(rows) == [("full@1", 1.0, False), ("p@1", None, True), ("p@2", None, True)]
    hist = query(wh, "select version, score, delta, best_version from history where "
                     "view = 'lemma' and name = 'p' order by position").rows()
    assert hist == [("1", None, None, None), ("2", None, None, None)]
    code, shown, _ = cli("show", "history", "--name", "p", "--view", "lemma", "-w", str(wh))
    assert code == 0 and not has_zero(shown) and "—" in shown
    code, shown, _ = cli("show", "gains", "--view", "lemma", "-w", str(wh))
    gains = {ln.split("│")[1].strip(): ln for ln in shown.splitlines() if ln.startswith("│")}
    assert gains["p@1"].count("—") == 2 and "—" not in gains["full@1"]
    code, _out, err = cli("check", "--view", "lemma", "--candidate", "p@2",
                          "--max-new-errors", "10", "-w", str(wh))
    assert code == 1 and "not evaluated: LEMMA of p@1, p@2: no LEMMA column" in err
    page = build_report(wh, "c", tmp_path / "r.html").read_text()
    block = re.search(r'<div class="hist" data-task="dep" data-view="lemma">(.*?)</div>',
                      page, re.S)
    assert block and "not evaluated" in block[1] and "<svg" not in block[1]
    lemma = page[page.index('id="c-lemma"'):]
    lemma = lemma[:lemma.index("</section>")]
    assert "not evaluated (—): p@1, p@2" in lemma
    board = re.search(r'<table class="board">(.*?)</table>', lemma, re.S)[1]
    assert not has_zero(board) and board.count("—") >= 4


def test_ner_key_without_entities(cli, tmp_path):
    """A NER key without any entity: recall and F1 NULL ('—'), a precision with predicted
    spans stays a number, and every gate fails."""
    key = "John\tO\nsleeps\tO\n\nMary\tO\nruns\tO\n"
    a = "John\tB-PER\nsleeps\tO\n\nMary\tO\nruns\tO\n"
    wh, code, out, err = run(cli, tmp_path, "ner", key, {"a": a, "b": key}, ".tsv")
    assert code == 0, err
    rows = {r[0]: r[1:] for r in query(wh, "select system, precision, recall, f1 from "
                                           "span_scores where type = 'ALL'").rows()}
    assert rows == {"a": (0.0, None, None), "b": (None, None, None)}
    assert summary_cells(out, "b")["F1 %"] == "—" and summary_cells(out, "a")["P %"] == "0.00"
    for base, cand in (("a", "b"), ("b", "a")):
        code, _out, err = cli("check", "--baseline", base, "--candidate", cand, "--min-delta",
                              "-100", "--max-new-errors", "5", "-w", str(wh))
        assert code == 1 and "FAILED: not evaluated: span recall and F1: the key of corpus " \
            "'c' has no entity" in err
    code, shown, _ = cli("show", "span_pairs", "--sys1", "a", "--sys2", "b", "-w", str(wh))
    assert "Delta F1: —" in shown and "Not evaluated: span recall and F1" in shown


# ------------------------------------------------------------------------------ --task


def test_forgetting_task_on_a_ner_file_infers_ner(cli, tmp_path):
    """A BIO-tagged word<TAB>tag key without --task is scored as NER (was: UPOS and LAS)."""
    key = "John\tB-PER\nSmith\tI-PER\nsleeps\tO\n\nParis\tB-LOC\n"
    wh, code, out, err = run(cli, tmp_path, None, key, {"a": key}, ".tsv")
    assert code == 0, err
    assert "task ner inferred from the key (word<TAB>tag with BIO tags)" in err
    assert "LAS" not in out and "UPOS" not in out
    assert query(wh, "select task from systems where role = 'key'").item() == "ner"
    assert query(wh, "select f1 from span_scores where system = 'a' and type = 'ALL'"
                 ).item() == 1.0


@pytest.mark.parametrize("text, task", [
    (conllu(*WORDS), "dep"), (conllu(*NO_HEADS), "pos"),
    ("le\tDET\nchat\tNOUN\n", "pos"), ("John\tB-PER\nsleeps\tO\n", "ner"),
    ("John\tO\nsleeps\tO\n", "ner"),
    ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n", "ner"),
    ("# sent_id = 1\n1\tJohn\tB-PER\t-\t-\n2\tsleeps\tO\t-\t-\n", "ner"),
    ("#begin document (d); part 000\nd\t0\t0\tJohn\tNNP\t(1)\n#end document\n", "coref"),
    ('{"doc_key": "d", "sentences": [["a"]], "clusters": []}\n', "coref"),
    ("# newdoc id = d\n# sent_id = 1\n1\tJohn\tJohn\tPROPN\t_\t_\t0\troot\t_\tEntity=(e1)\n",
     "coref"),
    ("[S:1]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n", "unl"),
], ids=["conllu-heads", "conllu-no-heads", "tsv-pos", "tsv-bio", "tsv-no-entity",
        "conll2003", "uner", "conll2012", "jsonlines", "corefud", "unl"])
def test_task_is_inferred_from_the_key_format(tmp_path, text, task):
    from sysdiff.flows.sniff import infer_task

    assert infer_task(write(tmp_path / "key.txt", text))[0] == task
    assert infer_task(write(tmp_path / "other.txt", "just some text\n")) is None


def test_a_key_of_no_known_format_is_refused_with_the_tasks(cli, tmp_path):
    _wh, code, _out, err = run(cli, tmp_path, None, "just some text\n", {"a": "x\n"}, ".txt")
    assert code == 2
    assert "cannot tell the task from the key's format; give --task (one of pos, dep, " \
        "coref, unl, nl, ner, srl)" in err


def test_run_files_and_watched_folders_infer_the_task(tmp_path):
    """A run file may leave out ``task``; a watched corpus without ``task`` in its
    corpus.toml gets the task of its key's content (a .tsv of BIO tags: ner, not pos)."""
    write(tmp_path / "key.tsv", "John\tB-PER\nsleeps\tO\n")
    write(tmp_path / "a.tsv", "John\tO\nsleeps\tO\n")
    write(tmp_path / "run.toml", 'corpus = "c"\nkey = "key.tsv"\n[systems]\na = "a.tsv"\n')
    spec = load_config(tmp_path / "run.toml")
    assert (spec.task, spec.inferred) == ("ner", "word<TAB>tag with BIO tags")
    corpus = tmp_path / "watch" / "c"
    (corpus / "systems").mkdir(parents=True)
    write(corpus / "key.tsv", "John\tB-PER\nsleeps\tO\n")
    write(corpus / "systems" / "a.tsv", "John\tO\nsleeps\tO\n")
    assert corpus_spec(corpus)[0].task == "ner"
    write(corpus / "key.tsv", "bla bla\n")
    with pytest.raises(InputError, match="cannot tell the task"):
        corpus_spec(corpus)
    write(corpus / "corpus.toml", 'task = "pos"\n')
    assert corpus_spec(corpus)[0].task == "pos"
