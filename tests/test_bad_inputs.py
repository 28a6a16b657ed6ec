"""Every bad input of issue 2: one clear line (file, line, what was expected), exit 2,
no traceback, and the warehouse byte-identical afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import snapshot

GOOD = """# sent_id = s1
# text = Le chat dort .
1\tLe\tle\tDET\t_\t_\t2\tdet\t_\t_
2\tchat\tchat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tdort\tdormir\tVERB\t_\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

# sent_id = s2
1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_
1\tde\tde\tADP\t_\t_\t2\tcase\t_\t_
2\tle\tle\tDET\t_\t_\t0\troot\t_\t_

"""


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


CASES = {
    # name: (file content as bytes or None for a missing file, expected phrase, line)
    "missing_file": (None, "no such file", None),
    "empty_file": (b"", "file is empty", None),
    "not_utf8": (GOOD.encode().replace(b"chat\tchat", b"ch\xe9t\tchat"), "not valid UTF-8", 4),
    "binary": (b"\x00\x01\x02binary\n", "binary data", 1),
    "wrong_column_count": (edit(GOOD, "3\tdort\tdormir\tVERB\t_\t_\t0", "3\tdort\tVERB\t_\t_\t0"),
                           "columns; expected 10", 5),
    "spaces_not_tabs": (edit(GOOD, "2\tchat\tchat\tNOUN\t_\t_\t3\tnsubj\t_\t_",
                             "2 chat chat NOUN _ _ 3 nsubj _ _"), "separated by spaces", 4),
    "non_integer_id": (edit(GOOD, "3\tdort", "x\tdort"), "is not an integer", 5),
    "non_integer_head": (edit(GOOD, "VERB\t_\t_\t0", "VERB\t_\t_\tzero"), "HEAD 'zero'", 5),
    "head_out_of_range": (edit(GOOD, "NOUN\t_\t_\t3", "NOUN\t_\t_\t9"), "out of range", 4),
    "negative_head": (edit(GOOD, "NOUN\t_\t_\t3", "NOUN\t_\t_\t-1"), "negative", 4),
    "duplicate_id": (edit(GOOD, "3\tdort", "2\tdort"), "duplicate word ID", 5),
    "skipped_id": (edit(GOOD, "3\tdort", "5\tdort"), "skipped word ID", 5),
    "truncated_last_line": (GOOD.rstrip("\n").rsplit("\n", 1)[0] + "\n2\tle\tle\tDE",
                            "truncated", 11),
}


def write(tmp: Path, name: str, content: bytes | str | None) -> Path:
    path = tmp / f"{name}.conllu"
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.fixture(scope="module")
def populated(tmp_path_factory, prefect_harness):
    """A warehouse holding one good run, to prove that failed runs leave it untouched."""
    from tests.conftest import run_cli

    tmp = tmp_path_factory.mktemp("wh")
    key = write(tmp, "key", GOOD)
    sys_ok = write(tmp, "ok", GOOD)
    code, _, err = run_cli("run", "--key", str(key), "--system", f"a={sys_ok}", "--corpus",
                           "c", "--task", "dep", "--ar-trials", "50", "-w", str(tmp / "wh"))
    assert code == 0, err
    return tmp, key


def assert_one_line_error(code: int, out: str, err: str, path: Path, phrase: str,
                          line: int | None) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sysdiff: error: ")
    assert "Traceback" not in err + out
    assert str(path) in lines[0]
    assert phrase in lines[0]
    if line is not None:
        assert f"{path}:{line}:" in lines[0]


def run_bad_key(tmp_path: Path, cli, case: str) -> None:  # noqa: ANN001
    """A run on a fresh warehouse whose key is ``case``: its one-line error, and no staging
    folder left beside the warehouse."""
    content, phrase, line = CASES[case]
    bad = write(tmp_path, case, content)
    ok = write(tmp_path, "ok", GOOD)
    code, out, err = cli("run", "--key", str(bad), "--system", f"a={ok}", "--corpus", "c",
                         "-w", str(tmp_path / "fresh"))
    assert_one_line_error(code, out, err, bad, phrase, line)
    assert [p.name for p in tmp_path.iterdir() if "staging" in p.name] == []


@pytest.mark.parametrize("case", ["empty_file", "head_out_of_range"])
def test_bad_key_on_fresh_warehouse_creates_nothing(case, tmp_path, cli):
    run_bad_key(tmp_path, cli, case)
    assert not (tmp_path / "fresh").exists()


def test_a_bad_key_leaves_no_staging_folder_when_its_frame_ends_after_it(tmp_path, cli,
                                                                       monkeypatch):
    """The key's frame, read beside its full read, writes in the run's staging folder: the
    run waits for it before it deletes the folder (else the frame made it again)."""
    import time

    import sysdiff.flows.token_ingest as ingest

    saved, add = [], ingest.FrameWriter.add

    def late(self, arrays) -> None:  # noqa: ANN001
        time.sleep(1.5)  # after the full read has failed
        saved.append(self.folder)
        add(self, arrays)

    monkeypatch.setattr(ingest.FrameWriter, "add", late)
    run_bad_key(tmp_path, cli, "head_out_of_range")
    assert saved  # the frame was taken


MISMATCHES = {
    "more_sentences": (GOOD + "# sent_id = s3\n1\tx\tx\tX\t_\t_\t0\troot\t_\t_\n\n",
                       "has 3 sentences but the key", 13),
    "fewer_sentences": (GOOD.split("\n\n")[0] + "\n\n", "has 1 sentences but the key", None),
    "form_differs": (edit(GOOD, "2\tchat\tchat", "2\tchien\tchat"),
                     "sentence s1, word 2: form 'chien' differs from the key's 'chat'", 4),
    "word_missing": (edit(GOOD, "4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_\n", ""),
                     "sentence s1, word 4: the key's '.' is missing after the last word: a "
                     "word is missing (3 words, the key has 4)", 5),
    # a merged word: the system's one form against the key's two, at the word's own line
    "word_merged": (GOOD.split("# sent_id = s2")[0] + "# sent_id = s2\n"
                    "1\tdu\tde\tADP\t_\t_\t0\troot\t_\t_\n\n",
                    "sentence s2, word 1: form 'du' where the key has 'de' 'le': a word is "
                    "missing (a merged word?) (1 words, the key has 2)", 9),
    "word_split": (edit(GOOD, "2\tchat\tchat\tNOUN\t_\t_\t3\tnsubj\t_\t_\n",
                        "2\tch\tchat\tNOUN\t_\t_\t4\tnsubj\t_\t_\n"
                        "3\tat\tchat\tNOUN\t_\t_\t4\tnsubj\t_\t_\n").replace(
                            "3\tdort", "4\tdort").replace("4\t.\t.\tPUNCT\t_\t_\t3",
                                                         "5\t.\t.\tPUNCT\t_\t_\t4"),
                   "sentence s1, word 2: forms 'ch' 'at' where the key has 'chat': it has an "
                   "extra word (a split word?) (5 words, the key has 4)", 4),
}


# The word check's findings above, as ``run`` reports them when the text (non-space
# characters) differs too: at the line of the system's first differing character. A merged
# or split word with the same text is aligned on the characters (tests/test_alignment.py).
TEXT_LINES = {"more_sentences": 14, "fewer_sentences": None, "form_differs": 4,
              "word_missing": 8}


@pytest.mark.parametrize("case", sorted(CASES) + sorted(TEXT_LINES))
def test_bad_system_file(case, populated, cli):
    """A bad file, or one whose text differs from the key's: one line, exit 2, nothing
    written."""
    tmp, key = populated
    content, phrase, line = CASES[case] if case in CASES else (
        *MISMATCHES[case][:2], TEXT_LINES[case])
    bad = write(tmp, case, content)
    before = snapshot(tmp / "wh")
    code, out, err = cli("run", "--key", str(key), "--system", f"b={bad}", "--corpus", "c",
                         "-w", str(tmp / "wh"))
    assert_one_line_error(code, out, err, bad, phrase, line)
    assert (case in TEXT_LINES) == ("the text differs from the key's at character" in err)
    assert snapshot(tmp / "wh") == before


@pytest.mark.parametrize("args, phrase", [
    (["--system", "bad name=x"], "invalid system name"),
    (["--system", "a=x", "--system", "a=y"], "given twice"),
    (["--system", "nofile"], "expected NAME=FILE"),
    (["--system", "a=x", "--task", "parse"], "unknown task"),
    (["--system", "a=x", "--map", "oops"], "expected SYSTEM:OLD=NEW"),
])
def test_bad_options(args, phrase, populated, cli):
    tmp, key = populated
    code, out, err = cli("run", "--key", str(key), "--corpus", "c", "-w", str(tmp / "wh"),
                         *args)
    assert code == 2
    assert phrase in err and len(err.strip().splitlines()) == 1


def test_sql_refuses_writes(populated, cli):
    tmp, _ = populated
    before = snapshot(tmp / "wh")
    code, _, err = cli("sql", "-w", str(tmp / "wh"), "drop view scores")
    assert code == 2 and "read-only" in err
    assert snapshot(tmp / "wh") == before


def test_sql_on_missing_warehouse(tmp_path, cli):
    code, _, err = cli("sql", "-w", str(tmp_path / "none"), "select 1")
    assert code == 2 and "no sysdiff warehouse" in err
