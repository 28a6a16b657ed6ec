"""NER systems tokenised otherwise than the key, placed on the key's characters (issue 14,
item 4; METRICS 4.1 and 5): a hand-worked case (a split token, merged tokens, sentences
joined), spans across a key sentence boundary, the property that retokenising a system
without moving a span boundary changes no span figure (the shared UNER data), and a text
that differs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sysdiff.flows.queries import query
from sysdiff.transforms import span_alignment as A
from sysdiff.transforms import spans as T
from sysdiff.transforms.alignment import words_text
from tests.conftest import REPO, snapshot
from tests.retokenise import retokenise_tags
from tests.snapshot import digests

NER = REPO / "data" / "ner"
SPAN_TABLES = ("span_scores", "span_classes", "span_pairs", "span_transitions",
               "span_oracles")

# The key: two sentences, four spans.
#   I visited [New-York]LOC and [Los Angeles]LOC .
#   [Smith]PER met [Ann Lee]PER today .
KEY = [[("I", "O"), ("visited", "O"), ("New-York", "B-LOC"), ("and", "O"), ("Los", "B-LOC"),
        ("Angeles", "I-LOC"), (".", "O")],
       [("Smith", "B-PER"), ("met", "O"), ("Ann", "B-PER"), ("Lee", "I-PER"), ("today", "O"),
        (".", "O")]]
# a splits "New-York" into "New - York" (one LOC span over the three: the key's characters).
A_SYS = [[("I", "O"), ("visited", "O"), ("New", "B-LOC"), ("-", "I-LOC"), ("York", "I-LOC"),
          ("and", "O"), ("Los", "B-LOC"), ("Angeles", "I-LOC"), (".", "O")],
         [("Smith", "O"), ("met", "O"), ("Ann", "B-PER"), ("Lee", "O"), ("today", "O"),
          (".", "O")]]
# b merges "Los Angeles" and "Ann Lee", splits "New-York" into "New -York" and "today" into
# "to day", and has one sentence where the key has two.
B_SYS = [[("I", "O"), ("visited", "O"), ("New", "B-LOC"), ("-York", "O"), ("and", "O"),
          ("LosAngeles", "B-ORG"), (".", "O"), ("Smith", "B-PER"), ("met", "O"),
          ("AnnLee", "B-PER"), ("to", "O"), ("day", "B-PER"), (".", "O")]]
# same: the key's tokens (the fast path), Smith not found.
SAME = [KEY[0], [("Smith", "O"), *KEY[1][1:]]]


# options of span_scores and span_pairs (with the settings of their bootstrap intervals)
PLACED_OPTIONS = "scheme:auto|bootstrap:1000|confidence:0.95|seed:0|align:characters|map:none"
SAME_OPTIONS = "scheme:auto|bootstrap:1000|confidence:0.95|seed:0|map:none"

def write_tags(path: Path, sentences: list[list[tuple[str, str]]]) -> Path:
    path.write_text("".join("".join(f"{w}\t{t}\n" for w, t in s) + "\n" for s in sentences),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hand(tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    tmp = tmp_path_factory.mktemp("hand")
    files = {n: write_tags(tmp / f"{n}.tsv", s) for n, s in
             (("key", KEY), ("a", A_SYS), ("b", B_SYS), ("same", SAME))}
    root = tmp / "wh"
    code, _, err = run_cli(*hand_run(files, root))
    assert code == 0, err
    return root


def hand_run(files: dict[str, Path], root: Path) -> list[str]:
    return ["run", "--task", "ner", "--corpus", "hw", "--key", str(files["key"]),
            *(x for n in ("a", "b", "same") for x in ("--system", f"{n}={files[n]}")),
            "--ar-trials", "50", "-w", str(root)]


def test_an_unchanged_rerun_reads_nothing_again(hand, cli):
    """The systems placed by characters are reused as they are (alignment and all)."""
    files = {n: hand.parent / f"{n}.tsv" for n in ("key", "a", "b", "same")}
    before = snapshot(hand)
    code, _, err = cli(*hand_run(files, hand))
    assert code == 0, err
    assert snapshot(hand) == before


def test_a_rerun_with_one_file_changed_keeps_the_placed_systems(hand, tmp_path, cli):
    """Only 'same' changes (now the key itself): a and b are reused from the warehouse, and
    the recomputed tables still compare them by characters."""
    import shutil

    root = tmp_path / "wh"
    shutil.copytree(hand, root)
    files = {n: hand.parent / f"{n}.tsv" for n in ("key", "a", "b")}
    files["same"] = write_tags(tmp_path / "same.tsv", KEY)
    stamps = "select system, ingested_at from systems where system in ('a', 'b') order by 1"
    before = query(root, stamps).rows()
    code, _, err = cli(*hand_run(files, root))
    assert code == 0, err
    assert query(root, stamps).rows() == before              # not read again
    got = dict(query(root, """select system, n_correct from span_scores
        where type = 'ALL'""").rows())
    assert got == {"a": 2, "b": 2, "same": 4}
    pair = query(root, """select n_units, corrections, new_errors, options from span_pairs
        where sys1 = 'same' and sys2 = 'b'""").rows()
    assert pair == [(5, 0, 3, PLACED_OPTIONS)]


def test_hand_worked_scores(hand):
    """a: predicted New-York (correct: 'New - York' covers its characters), Los Angeles
    (correct), Ann (boundary): P = 2/3, R = 2/4, F1 = 2PR/(P+R) = 4/7.
    b: New (boundary: the key token's first three characters), LosAngeles ORG (type: the
    key's characters, another type), Smith (correct), AnnLee (correct: the characters of
    'Ann Lee'), day PER (spurious: inside the key's 'today'): P = 2/5, R = 2/4, F1 = 4/9."""
    got = {r["system"]: r for r in query(hand, "select * from span_scores where type = 'ALL'")
           .to_dicts()}
    figures = {s: (r["n_gold"], r["n_pred"], r["n_correct"]) for s, r in got.items()}
    assert figures == {"a": (4, 3, 2), "b": (4, 5, 2), "same": (4, 3, 3)}
    assert got["a"]["precision"] == pytest.approx(2 / 3)
    assert got["a"]["recall"] == pytest.approx(1 / 2)
    assert got["a"]["f1"] == pytest.approx(4 / 7)
    assert got["b"]["precision"] == pytest.approx(2 / 5)
    assert got["b"]["f1"] == pytest.approx(4 / 9)
    assert got["a"]["options"] == PLACED_OPTIONS
    assert got["same"]["options"] == SAME_OPTIONS


def test_hand_worked_token_accuracy(hand):
    """Over the key's 13 tokens, a key token without a system token of its characters is
    wrong. a: New-York (split) and Smith, Lee (O where the key has B-PER, I-PER) wrong:
    10/13. b: New-York, Los, Angeles, Ann, Lee, today have no token of their characters:
    7/13 (Smith, and the O tokens I visited and met . . are right)."""
    tags = {r["system"]: r for r in query(hand, "select * from span_tags").to_dicts()}
    assert (tags["a"]["n_tokens"], tags["a"]["n_tokens_correct"]) == (15, 10)
    assert tags["a"]["token_accuracy"] == pytest.approx(10 / 13)
    assert (tags["b"]["n_tokens"], tags["b"]["n_tokens_correct"]) == (13, 7)
    assert tags["b"]["token_accuracy"] == pytest.approx(7 / 13)
    assert tags["same"]["token_accuracy"] == pytest.approx(12 / 13)
    assert tags["b"]["options"] == "scheme:auto|align:characters|map:none"
    systems = dict(query(hand, "select system, alignment from systems").rows())
    assert systems == {"__key__": "identical", "a": "characters", "b": "characters",
                       "same": "identical"}


def test_hand_worked_classes_and_pairs(hand):
    """Units: the 4 key spans and b's spurious day. a: correct, correct, missed, boundary,
    absent; b: boundary, type, correct, correct, spurious. a -> b: all 5 differ, 2
    corrections (Smith missed -> correct, Ann Lee boundary -> correct), 3 new errors
    (New-York correct -> boundary, Los Angeles correct -> type, day absent -> spurious).
    Oracle recall {a, b} = 4/4."""
    rows = query(hand, """select system, sent, start, "end", type, cls, pred_start, pred_end
        from span_classes where system in ('a', 'b') order by system, sent, start""").rows()
    # positions in the key's tokens; a boundary inside a key token is -(1 + its character
    # offset in the key sentence's text): 'New' ends at offset 10 of "IvisitedNew-York...",
    # 'day' starts at offset 16 of "SmithmetAnnLeetoday."
    assert rows == [
        ("a", 0, 2, 2, "LOC", "correct", 2, 2), ("a", 0, 4, 5, "LOC", "correct", 4, 5),
        ("a", 1, 0, 0, "PER", "missed", None, None), ("a", 1, 2, 3, "PER", "boundary", 2, 2),
        ("b", 0, 2, 2, "LOC", "boundary", 2, -11), ("b", 0, 4, 5, "LOC", "type", 4, 5),
        ("b", 1, -17, 4, "PER", "spurious", -17, 4), ("b", 1, 0, 0, "PER", "correct", 0, 0),
        ("b", 1, 2, 3, "PER", "correct", 2, 3)]
    pair = query(hand, "select * from span_pairs where sys1 = 'a' and sys2 = 'b'").row(
        0, named=True)
    assert (pair["n_units"], pair["n_diff"], pair["corrections"], pair["new_errors"],
            pair["changed_errors"]) == (5, 5, 2, 3, 0)
    assert pair["options"] == PLACED_OPTIONS
    oracle = query(hand, """select n_gold, n_correct from span_oracles where type = 'ALL'
        and n_systems = 2 and list_sort(systems) = ['a', 'b']""").rows()
    assert oracle == [(4, 4)]
    moves = dict(((c1, c2), n) for c1, c2, n in query(hand, """select c1, c2, count from
        span_transitions where sys1 = 'a' and sys2 = 'b' and type = 'ALL' and count > 0
        and c1 != c2""").rows())
    assert moves == {("correct", "boundary"): 1, ("correct", "type"): 1,
                     ("missed", "correct"): 1, ("boundary", "correct"): 1,
                     ("absent", "spurious"): 1}


def test_hand_worked_examples_show_the_systems_words(hand, cli):
    import json

    code, out, err = cli("examples", "--sys1", "a", "--sys2", "b", "--class", "new_error",
                         "--format", "json", "-w", str(hand))
    assert code == 0, err
    rows = {r["span"]: r for r in json.loads(out)}
    assert rows["New-York"]["a"] == "correct (LOC 'New - York')"
    assert rows["New-York"]["b"] == "boundary (LOC 'New')"
    assert rows["Los Angeles"]["b"] == "type (ORG 'LosAngeles')"
    assert rows["day"]["b"] == "spurious (PER 'day')"
    # a unit inside a key token brackets the key token it touches
    assert rows["day"]["sentence"] == "Smith met Ann Lee [today] ."
    code, out, err = cli("examples", "--sys1", "same", "--sys2", "a", "--class", "new_error",
                         "--format", "json", "-w", str(hand))
    assert code == 0, err
    assert [(r["span"], r["same"], r["a"]) for r in json.loads(out)] == [
        ("Ann Lee", "correct (PER 3-4)", "boundary (PER 'Ann')")]


def test_a_span_across_a_key_sentence_boundary_stays_in_its_first_sentence():
    """Key: 'Go .' / '[Smith]PER came'. The system has one sentence and tags '. Smith' as
    one PER span: it belongs to key sentence 0 (its first character), ends -(1 + 7) (the
    offset of Smith's 'h' from the start of 'Go.'), overlaps no key span of sentence 0, and
    so is spurious; the key's Smith is missed (never boundary: the span is not in its
    sentence)."""
    key_rows = pl.DataFrame({"sent": [0, 0, 1, 1], "id": [1, 2, 1, 2],
                             "form": ["Go", ".", "Smith", "came"], "line": [1, 2, 4, 5]})
    sys_rows = key_rows.with_columns(sent=pl.lit(0), id=pl.Series([1, 2, 3, 4]))
    key_text, sys_text = words_text(key_rows), words_text(sys_rows)
    spans = pl.DataFrame({"sent": [0], "start": [1], "end": [2], "type": ["PER"],
                          "text": [". Smith"]}).cast({"sent": pl.Int32, "start": pl.Int32,
                                                      "end": pl.Int32})
    placed = A.place_spans(spans, key_text, sys_text)
    assert placed.select("sent", "start", "end").rows() == [(0, 1, -8)]
    key = pl.DataFrame({"sent": [1], "start": [0], "end": [0], "type": ["PER"]}).cast(
        {"sent": pl.Int32, "start": pl.Int32, "end": pl.Int32})
    offsets = A.key_offsets(key_rows)
    classes, spurious = T.classify(A.char_positions(key, offsets),
                                   A.char_positions(placed, offsets))
    assert classes["cls"].to_list() == [T.MISSED]
    assert spurious.select("sent", "start", "end").rows() == [(0, 1, -8)]


def _span_figures(root: Path, system: str) -> dict[str, list[tuple]]:
    """Every span figure of ``system`` (its words and options aside), as sorted rows."""
    who = f"'{system}'"
    out = {}
    out["scores"] = query(root, f"""select type, n_gold, n_pred, n_correct, precision,
        recall, f1 from span_scores where system = {who} order by all""").rows()
    out["classes"] = query(root, f"""select sent, start, "end", type, in_key, cls,
        pred_start, pred_end, pred_type from span_classes where system = {who}
        order by all""").rows()
    out["pairs"] = query(root, f"""select sys2, n_units, n_diff, corrections, new_errors,
        changed_errors, diff, delta_f1, mcnemar_p, ar_p from span_pairs where sys1 = {who}
        and sys2 = 'other' order by all""").rows()
    out["transitions"] = query(root, f"""select type, c1, c2, count from span_transitions
        where sys1 = {who} and sys2 = 'other' order by all""").rows()
    out["oracles"] = query(root, f"""select type, n_gold, n_correct, recall from span_oracles
        where list_sort(systems) = list_sort([{who}, 'other']) order by all""").rows()
    return out


@pytest.fixture(scope="module")
def retokenised(tmp_path_factory, prefect_harness):
    """The shared UNER data with spacy_sm 3.6.0 twice, as is and retokenised (words split
    and merged, sentences joined, no span boundary moved), and spacy_sm 3.8.0; run with the
    default shards and with shards of 7 sentences."""
    from tests.conftest import run_cli

    tmp = tmp_path_factory.mktemp("retok")
    retok = retokenise_tags(NER / "spacy_sm-3.6.0.tsv", tmp / "retok.tsv", seed=3)
    run = tmp / "run.toml"
    run.write_text(f"""corpus = "uner"\ntask = "ner"\nkey = "{NER / 'gold.iob2'}"
map = "{NER / 'map.tsv'}"\n[systems]\norig = "{NER / 'spacy_sm-3.6.0.tsv'}"
retok = "{retok}"\nother = "{NER / 'spacy_sm-3.8.0.tsv'}"\n""")
    roots = {"default": tmp / "wh", "small": tmp / "small"}
    for name, extra in (("default", ()), ("small", ("--shard-sents", "7"))):
        code, _, err = run_cli("run", str(run), "-w", str(roots[name]), "--ar-trials", "200",
                               *extra)
        assert code == 0, err
    return roots


def test_retokenised_without_moving_a_boundary_gives_the_same_span_figures(retokenised):
    root = retokenised["default"]
    systems = {r["system"]: r for r in query(root, "select * from systems").to_dicts()}
    assert systems["retok"]["alignment"] == "characters"
    assert systems["orig"]["alignment"] == "identical"
    # really tokenised otherwise: other token and sentence counts
    assert systems["retok"]["n_units"] != systems["orig"]["n_units"]
    assert systems["retok"]["n_sents"] < systems["orig"]["n_sents"]
    orig, retok = _span_figures(root, "orig"), _span_figures(root, "retok")
    assert orig["scores"] and orig["classes"] and orig["pairs"] and orig["transitions"]
    assert retok == orig
    pair = query(root, "select n_diff, n_units from span_pairs where sys1 = 'orig' "
                       "and sys2 = 'retok'").rows()
    assert pair[0][0] == 0 and pair[0][1] > 1000
    # the spans' own words are the retokenised file's
    words = query(root, """select o.text as o_text, r.text as r_text from spans o
        join spans r using (sent, start, "end", type)
        where o.system = 'orig' and r.system = 'retok' and o.text != r.text""")
    assert words.height > 0
    assert all(a.replace(" ", "") == b.replace(" ", "") for a, b in words.rows())
    # token accuracy is over the key's tokens: split or merged key tokens are wrong
    tags = {r["system"]: r for r in query(root, "select * from span_tags").to_dicts()}
    assert tags["retok"]["token_accuracy"] < tags["orig"]["token_accuracy"]


def test_shards_do_not_change_a_figure_with_a_system_placed_by_characters(retokenised):
    default, small = (digests(retokenised[k]) for k in ("default", "small"))
    for table in SPAN_TABLES:
        assert default[table] == small[table], table


def test_a_text_that_differs_is_refused(tmp_path, cli):
    """One letter changed in the split-token system: one line naming the file and line, the
    first differing character and both strings; exit 2; the warehouse as it was."""
    key = write_tags(tmp_path / "key.tsv", KEY)
    good = write_tags(tmp_path / "a.tsv", A_SYS)
    bad_rows = [list(s) for s in A_SYS]
    bad_rows[0][7] = ("Angelos", "I-LOC")              # line 8 of the file
    bad = write_tags(tmp_path / "bad.tsv", bad_rows)
    root = tmp_path / "wh"
    code, _, err = cli("run", "--task", "ner", "--corpus", "hw", "--key", str(key),
                       "--system", f"a={good}", "--ar-trials", "10", "-w", str(root))
    assert code == 0, err
    before = snapshot(root)
    code, _, err = cli("run", "--task", "ner", "--corpus", "hw", "--key", str(key),
                       "--system", f"a={good}", "--system", f"bad={bad}", "--ar-trials", "10",
                       "-w", str(root))
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{bad}:8: the text differs from the key's at character 27" in err
    assert "'ndLosAngelos.Smithme'" in err and "'ndLosAngeles.Smithme'" in err
    assert f"({key}:6)" in err and "sentence 1" in err
    assert snapshot(root) == before
    # with --keep-going the bad system is skipped (exit 3) and nothing of it is committed
    code, _, err = cli("run", "--task", "ner", "--corpus", "hw", "--key", str(key),
                       "--system", f"a={good}", "--system", f"bad={bad}", "--ar-trials", "10",
                       "--keep-going", "-w", str(root))
    assert code == 3 and "system 'bad' skipped" in err, err
    assert query(root, "select count(*) from systems where system = 'bad'").item() == 0
    assert query(root, "select count(*) from spans where system = 'bad'").item() == 0


def test_the_text_of_a_tag_file_is_the_one_the_conll_reader_gets():
    """``words_text`` (tag files: one word per token) gives what ``file_text`` gives for the
    same rows read as CoNLL-U words, on the UNER key (spaces inside FORMs removed, NFC)."""
    import numpy as np

    from sysdiff.schemas.formats.conllu import KIND_WORD
    from sysdiff.schemas.formats.spans import read_tags
    from sysdiff.transforms.alignment import file_text, words_text

    rows = read_tags(NER / "gold.iob2").tokens
    rows = pl.concat([rows.head(3).with_columns(form=pl.Series(["A\u00a0b", "e\u0301", "x"])),
                      rows.slice(3)])
    fast = words_text(rows)
    slow = file_text(rows.with_columns(token_id=pl.col("id").cast(pl.String),
                                       kind=pl.lit(KIND_WORD, pl.Int8)))
    assert fast.chars == slow.chars and fast.chars.startswith("Ab\u00e9x")
    for name in fast.__dataclass_fields__:
        mine, theirs = getattr(fast, name), getattr(slow, name)
        if isinstance(mine, np.ndarray):
            assert np.array_equal(mine, theirs), name
        elif isinstance(mine, pl.Series):
            assert mine.equals(theirs), name
        else:
            assert mine == theirs, name
