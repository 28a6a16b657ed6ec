"""`sysdiff sql` (and every read-only command) reads the warehouse and nothing else: every
statement that writes, reads another file, loads an extension or changes a setting is refused
with one line and exit 2, and the warehouse stays byte-identical. A results file changed
behind the warehouse's back is detected by the next run and recomputed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from sysdiff.flows.queries import query
from tests.conftest import SEQUOIA, snapshot
from tests.test_scale import first_sentences


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_harness) -> Path:
    """A small warehouse of its own (2 systems, 20 sentences), under a folder whose name
    holds the characters a shell or a glob would misread."""
    from tests.conftest import run_cli

    tmp = tmp_path_factory.mktemp("sandbox") / "we [1]*? 'q\""
    tmp.mkdir()
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 20)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "a.conllu", 20)
    b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp / "b.conllu", 20)
    root = tmp / "wh"
    code, _, err = run_cli("run", "--key", str(key), "--system", f"a={a}", "--system",
                           f"b={b}", "--corpus", "c", "--ar-trials", "50", "-w", str(root))
    assert code == 0, err
    return root


def live_file(root: Path, table: str = "scores") -> Path:
    parts = json.loads((root / "manifest.json").read_text())["tables"][table]
    return root / parts[sorted(parts)[0]]["file"]


def outside(root: Path) -> Path:
    """A file outside the warehouse that a sandbox escape could read."""
    path = root.parent / "outside-secret.txt"
    path.write_text("secret\n")
    return path


# statement -> a phrase of the one-line refusal. {root}, {live}, {outside} and {out} are
# filled in with the warehouse, one of its live Parquet files, a file beside it, and a new
# path outside it.
REFUSED = {
    "copy_out": ("COPY (SELECT 1) TO '{out}'", "COPY statements are refused"),
    "copy_over_live_file": ("COPY (SELECT * FROM scores) TO '{live}' (FORMAT parquet)",
                            "COPY statements are refused"),
    "copy_over_manifest": ("COPY (SELECT 1) TO '{root}/manifest.json'",
                           "COPY statements are refused"),
    "export_database": ("EXPORT DATABASE '{out}'", "EXPORT statements are refused"),
    "read_text_outside": ("SELECT * FROM read_text('{outside}')", "Cannot access file"),
    "read_text_passwd": ("SELECT * FROM read_text('/etc/passwd')", "Cannot access file"),
    "read_text_environ": ("SELECT * FROM read_text('/proc/self/environ')",
                          "Cannot access file"),
    "read_manifest": ("SELECT * FROM read_text('{root}/manifest.json')", "Cannot access file"),
    "read_csv": ("SELECT * FROM read_csv('{outside}')", "Cannot access file"),
    "read_parquet_glob": ("SELECT * FROM read_parquet('{root}/tables/*/*/*/*.parquet')",
                          "Cannot access file"),
    "glob_root": ("SELECT * FROM glob('/root/**')", "Cannot access file"),
    "glob_warehouse": ("SELECT * FROM glob('{root}/*')", "Cannot access file"),
    "load": ("LOAD httpfs", "LOAD statements are refused"),
    "install": ("INSTALL httpfs", "INSTALL statements are refused"),
    "set": ("SET threads = 1", "SET statements are refused"),
    "set_search_path": ("SET file_search_path = '/'", "SET statements are refused"),
    "pragma": ("PRAGMA show_tables", "PRAGMA statements are refused"),
    "attach": ("ATTACH '{out}' AS other", "ATTACH statements are refused"),
    "create": ("CREATE TABLE t AS SELECT 1", "CREATE statements are refused"),
    "insert": ("INSERT INTO scores SELECT * FROM scores", "INSERT statements are refused"),
    "call": ("CALL pragma_version()", "CALL statements are refused"),
    "copy_in_pivot": ("COPY (PIVOT scores ON view USING first(accuracy)) TO '{out}'",
                      "COPY statements are refused"),
    "explain_analyze_copy": ("EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}'",
                             "COPY statements are refused"),
    "two_statements": ("SELECT 1; COPY (SELECT 1) TO '{out}'", "one SQL query at a time"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_statement_is_refused(name, warehouse, tmp_path, cli):
    sql, phrase = REFUSED[name]
    out = tmp_path / "out.csv"
    paths = {"root": warehouse, "live": live_file(warehouse), "outside": outside(warehouse),
             "out": out}
    sql = sql.format(**{k: str(v).replace("'", "''") for k, v in paths.items()})
    before, beside = snapshot(warehouse), sorted(os.listdir(warehouse.parent))
    code, stdout, err = cli("sql", "-w", str(warehouse), sql)
    assert code == 2, (stdout, err)
    assert err.count("\n") == 1 and err.startswith("sysdiff: error: "), err
    assert phrase in err, err
    assert snapshot(warehouse) == before
    assert sorted(os.listdir(warehouse.parent)) == beside
    assert not out.exists()


def test_queries_still_run(warehouse, cli):
    """Reads of every kind work: tables, DESCRIBE, SHOW, SUMMARIZE, PIVOT, EXPLAIN."""
    for sql in ["SELECT count(*) AS n FROM scores", "DESCRIBE scores", "SHOW TABLES",
                "SUMMARIZE pairs", "PIVOT (SELECT system, view, accuracy FROM scores) ON view "
                "USING first(accuracy)", "EXPLAIN SELECT * FROM units",
                "SELECT count(*) FROM read_parquet('"
                + str(live_file(warehouse)).replace("'", "''") + "')"]:
        code, out, err = cli("sql", "-w", str(warehouse), "-f", "csv", sql)
        assert code == 0, (sql, err)
        assert out.strip(), sql
    systems = query(warehouse, "select distinct system from scores order by 1")["system"]
    assert systems.to_list() == ["a", "b"]


def test_connection_settings_are_locked(warehouse):
    from sysdiff.flows.queries import connect

    box = connect(warehouse)
    con = box.con
    try:
        settings = dict(con.execute(
            "select name, value from duckdb_settings() where name in ('enable_external_access',"
            " 'lock_configuration', 'autoinstall_known_extensions', "
            "'autoload_known_extensions')").fetchall())
        assert settings == {"enable_external_access": "false", "lock_configuration": "true",
                            "autoinstall_known_extensions": "false",
                            "autoload_known_extensions": "false"}
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("set enable_external_access = true")
    finally:
        box.close()


def test_blob_column_as_csv(warehouse, cli):
    code, out, err = cli("sql", "-w", str(warehouse), "-f", "csv",
                         "select 'a\\x00b'::blob as raw, 1 as n")
    assert code == 0, err
    assert out.splitlines()[0] == "raw,n"
    code, out, err = cli("sql", "-w", str(warehouse), "-f", "json",
                         "select 'ab'::blob as raw")
    assert code == 0, err
    assert json.loads(out) == [{"raw": "ab"}]


def test_copied_and_moved_warehouse_work(warehouse, tmp_path, cli):
    """The manifest names files relative to the warehouse and readers resolve them from its
    root: a copy reads its own files, and a moved warehouse still works."""
    copy = tmp_path / "copy [x] 'y'" / "wh"
    shutil.copytree(warehouse, copy)
    want = query(warehouse, "select system, accuracy from scores order by all")
    live = live_file(copy)
    live.write_bytes(b"not parquet")  # the copy reads its own files, not the original's
    for sql in ("select * from scores", "select count(*) from scores"):  # no number either
        code, _, err = cli("sql", "-w", str(copy), sql)
        assert code == 2 and err.startswith("sysdiff: error: SQL error"), err
        assert "the table scores cannot be read" in err and "too small" in err
    code, out, err = cli("sql", "-w", str(copy), "select count(*) from pairs")
    assert code == 0, err  # the other tables still read
    shutil.rmtree(copy)
    shutil.copytree(warehouse, copy)
    moved = tmp_path / "moved*?" / "wh"
    moved.parent.mkdir()
    copy.rename(moved)
    assert query(moved, "select system, accuracy from scores order by all").equals(want)
    code, out, err = cli("show", "scores", "-w", str(moved), "--view", "upos")
    assert code == 0 and "a" in out, err


def test_outside_duckdb_client_opens_the_catalog(warehouse, tmp_path, monkeypatch):
    """As the README says: any DuckDB client, from any folder (the catalog's views name
    files by absolute path)."""
    want = query(warehouse, "select count(*) as n from scores")["n"][0]
    monkeypatch.chdir(tmp_path)
    con = duckdb.connect(str(warehouse / "sysdiff.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from scores").fetchone()[0] == want > 0
    finally:
        con.close()


def test_comma_in_warehouse_path_works(warehouse, tmp_path, cli):
    copy = tmp_path / "a,b" / "wh"
    shutil.copytree(warehouse, copy)
    code, out, err = cli("sql", "-w", str(copy), "-f", "csv", "select count(*) as n from scores")
    assert code == 0 and out.splitlines()[1] == str(
        query(warehouse, "select count(*) as n from scores")["n"][0]), err


def test_damaged_results_file_is_recomputed(tmp_path, cli):
    """A live file whose bytes no longer match the manifest (a forged score) is found by the
    next run, which warns and recomputes its partition."""
    tmp = tmp_path / "in"
    tmp.mkdir()
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 10)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "a.conllu", 10)
    b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp / "b.conllu", 10)
    root = tmp_path / "wh"
    argv = ["run", "--key", str(key), "--system", f"a={a}", "--system", f"b={b}", "--corpus",
            "c", "--ar-trials", "20", "-w", str(root)]
    assert cli(*argv)[0] == 0
    honest = query(root, "select system, view, punct, accuracy from scores order by all")
    manifest = json.loads((root / "manifest.json").read_text())["tables"]
    target = root / manifest["scores"]["corpus=c/system=a"]["file"]
    con = duckdb.connect()
    forged = target.with_suffix(".forged")
    con.execute(f"copy (select * replace (1.0::double as accuracy) from "
                f"read_parquet('{target}')) to '{forged}' (format parquet)")
    con.close()
    os.replace(forged, target)
    assert set(query(root, "select accuracy from scores where system = 'a'")["accuracy"]) \
        == {1.0}
    code, _, err = cli(*argv)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "warning" in line and ".parquet" in line]
    assert len(warnings) == 1 and str(target) in warnings[0], err
    assert "recomputed" in warnings[0]
    got = query(root, "select system, view, punct, accuracy from scores order by all")
    assert got.equals(honest)
    after = json.loads((root / "manifest.json").read_text())["tables"]
    assert {t: sorted(p) for t, p in after.items()} == {t: sorted(p) for t, p in
                                                       manifest.items()}
    assert after["units"] == manifest["units"]  # only the results were recomputed
    code, _, err = cli(*argv)  # and the next run is quiet again
    assert code == 0 and "warning" not in err, err


def test_missing_results_file_is_recomputed(tmp_path, cli):
    tmp = tmp_path / "in"
    tmp.mkdir()
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 10)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "a.conllu", 10)
    root = tmp_path / "wh"
    argv = ["run", "--key", str(key), "--system", f"a={a}", "--corpus", "c", "--ar-trials",
            "20", "-w", str(root)]
    assert cli(*argv)[0] == 0
    want = query(root, "select count(*) as n from units")
    target = live_file(root, "units")
    target.unlink()
    for _ in range(2):  # (built, then again: a missing file's views are never cached)
        code, _, err = cli("sql", "-w", str(root), "select count(*) from stored.units")
        assert code == 2 and "the table units cannot be read" in err, err
        assert str(target) in err and "Traceback" not in err
    code, _, err = cli(*argv)
    assert code == 0, err
    assert "the file is missing" in err and str(target) in err
    assert query(root, "select count(*) as n from units").equals(want)


def test_stale_temp_files_are_removed_by_the_next_run(tmp_path, cli):
    """What a run killed while rebuilding the catalog or writing the manifest leaves."""
    tmp = tmp_path / "in"
    tmp.mkdir()
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 5)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "a.conllu", 5)
    root = tmp_path / "w[1]" / "wh"
    argv = ["run", "--key", str(key), "--system", f"a={a}", "--corpus", "c", "--ar-trials",
            "20", "-w", str(root)]
    assert cli(*argv)[0] == 0
    clean = sorted(p.name for p in root.iterdir())
    stale = [".catalog.k2j3h4.duckdb", ".catalog.k2j3h4.duckdb.wal",
             ".manifest.json.8a7sd6.tmp"]
    for name in stale:
        (root / name).write_bytes(b"left by a killed run")
    staging = root.parent / ".sysdiff-staging-wh-x1y2"
    (staging / "tables").mkdir(parents=True)
    assert cli(*argv)[0] == 0  # nothing to recompute: the run still cleans up
    assert sorted(p.name for p in root.iterdir()) == clean
    assert not staging.exists()


def test_a_second_connection_in_one_process_is_sandboxed_too(warehouse):
    """A query while another sandboxed connection is open (the report does this) opens its
    own sandbox; both read the warehouse and nothing else."""
    from sysdiff.flows.queries import connect

    box = connect(warehouse)
    try:
        n = query(warehouse, "select count(*) as n from scores")["n"][0]
        assert box.con.sql("select count(*) from scores").fetchall() == [(n,)]
        with pytest.raises(duckdb.Error):
            box.con.execute("select * from read_text('/etc/passwd')").fetchall()
    finally:
        box.close()
