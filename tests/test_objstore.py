"""The warehouse on an object store (issue 22): a real S3 server on 127.0.0.1 (moto, started
by the session, ``tests/objstore.py``). URLs refused or accepted; every bundled kind of
corpus gives the tables of the local-disk run; the read commands and the API read the
store; a run killed at any point leaves the previous state readable and the next run
cleans up; two writers; readers during commits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from sysdiff.flows.store import LEASE, LOG, STAGING, StoreURL, parse_location
from tests.conftest import BUNDLED, REPO, run_cli
from tests.objstore import (  # noqa: F401 (fixtures)
    bucket,
    commit_from_one_version_twice,
    s3_env,
)
from tests.snapshot import sandbox_dumps
from tests.test_scale import sample

CORPORA = {**BUNDLED, "ner": REPO / "data/ner/ner.toml",
           "ner-tsv": REPO / "data/ner/ner-tsv.toml"}  # its systems stored lean


# ------------------------------------------------------------------------------ URLs

@pytest.mark.parametrize("url", ["ftp://host/wh", "http://host/wh", "s3:/bucket/wh",
                                 "s3:bucket", "s3://"])
def test_an_unsupported_or_broken_url_is_refused_and_nothing_is_created(url, cli, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["run", str(BUNDLED["sequoia"])], ["sql", "select 1"], ["show", "scores"]):
        code, _out, err = cli(*argv, "-w", url)
        assert code == 2, (argv, err)
        assert "URL" in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_file_url_is_the_local_folder(cli, tmp_path):
    root = tmp_path / "wh"
    code, _out, err = cli("run", str(BUNDLED["sequoia"]), "-w", root.as_uri())
    assert code == 0, err
    assert (root / "manifest.json").is_file() and (root / "sysdiff.duckdb").is_file()


def test_a_missing_bucket_or_an_unreachable_store_is_one_line(s3_env, cli, monkeypatch):  # noqa: F811
    code, _out, err = cli("run", str(BUNDLED["unl"]), "-w", "s3://no-such-bucket-here/wh")
    assert code == 2 and "no such bucket 'no-such-bucket-here'" in err, err
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr("sysdiff.flows.store._FILESYSTEMS", {})
    code, _out, err = cli("sql", "select 1", "-w", "s3://bucket/wh")
    assert code == 2 and "cannot reach the object store" in err, err


def test_a_bucket_called_bucket_is_not_taken_for_a_missing_one(s3_env, cli):  # noqa: F811
    """A missing object's error names its path; 'bucket' in that path is no missing bucket
    (the first run into s3://my-bucket/wh was refused as one)."""
    from sysdiff.flows.store import filesystem

    name = f"my-bucket-{uuid.uuid4().hex[:8]}"
    filesystem("s3").mkdir(name)
    code, _out, err = cli("run", str(BUNDLED["unl"]), "-w", f"s3://{name}/wh")
    assert code == 0, err
    assert StoreURL(f"s3://{name}/wh/{LOG}").exists()


def test_a_refused_conditional_write_is_known_however_the_store_words_it():
    """SeaweedFS answers a conditional write on an existing object with a 412 that names
    no condition: s3fs then raises OSError(EINVAL), not FileExistsError."""
    from botocore.exceptions import ClientError
    from s3fs.errors import translate_boto_error

    from sysdiff.flows.store import precondition_failed

    def translated(code: str, status: int, message: str) -> OSError:
        return translate_boto_error(ClientError(
            {"Error": {"Code": code, "Message": message},
             "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject"))

    weed = translated("PreconditionFailed", 412,
                      "At least one of the pre-conditions you specified did not hold")
    assert type(weed) is OSError and precondition_failed(weed)
    assert not precondition_failed(translated("NoSuchKey", 404, "The key does not exist."))
    assert not precondition_failed(translated("InternalError", 500, "We encountered an error"))
    assert not precondition_failed(OSError(28, "No space left on device"))


def test_parse_location():
    assert parse_location("s3://b/p/") == StoreURL("s3://b/p")
    assert parse_location("file:///tmp/x").as_posix() == "/tmp/x"
    assert parse_location("rel/wh").is_absolute()
    assert (StoreURL("s3://b/p") / "tables/x.parquet").url == "s3://b/p/tables/x.parquet"
    assert StoreURL("s3://b/p/q").parent == StoreURL("s3://b/p")
    assert not hasattr(StoreURL("s3://b/p"), "__fspath__")  # never taken for a local path


# ------------------------------------------------------------------- tables, commands

@pytest.fixture(scope="module")
def local_runs(tmp_path_factory, prefect_harness) -> dict:
    """Each corpus run once on the local disk: its dumps."""
    out = {}
    for name, toml in CORPORA.items():
        root = tmp_path_factory.mktemp(f"local-{name}") / "wh"
        code, _out, err = run_cli("run", str(toml), "-w", str(root))
        assert code == 0, err
        out[name] = sandbox_dumps(root)
    return out


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_tables_on_s3_equal_the_local_run(name, local_runs, bucket, cli):  # noqa: F811
    root = f"{bucket}/evals/wh"
    code, out, err = cli("run", str(CORPORA[name]), "-w", root)
    assert code == 0, err
    assert root in out
    got = sandbox_dumps(StoreURL(root))
    assert got and sorted(got) == sorted(local_runs[name])
    assert {t for t in got if got[t] != local_runs[name][t]} == set()
    if name == "ner-tsv":  # its systems were read fast and stored lean, on the store too
        assert query(StoreURL(root), "select count(distinct system) n "
                     "from stored.span_words")["n"][0] == 2
    objects = StoreURL(root).find()
    assert not any(k.startswith((STAGING, LEASE)) for k in objects)  # nothing left behind
    assert not any(k.endswith(".duckdb") for k in objects)  # no catalog file on a store
    # no local folder was made for the URL
    assert not (REPO / "s3:").exists() and not (REPO / bucket.replace("://", ":/")).exists()


def test_read_commands_and_the_api_on_s3(bucket, cli, tmp_path):  # noqa: F811
    import sysdiff

    root = f"{bucket}/wh"
    assert cli("run", str(BUNDLED["sequoia"]), "-w", root)[0] == 0
    code, out, err = cli("sql", "select count(*) as n from scores", "-w", root, "-f", "csv")
    assert code == 0, err
    n_scores = int(out.split()[1])
    assert n_scores > 0
    code, out, err = cli("show", "scores", "-w", root, "-f", "csv")
    assert code == 0 and "spacy_md@3.8.0" in out, err
    code, out, err = cli("examples", "--sys1", "spacy_sm@3.8.0", "--sys2", "spacy_md@3.8.0",
                         "--class", "correction", "--view", "upos", "-w", root, "-f", "csv")
    assert code == 0 and "correction" in out, err
    code, _out, err = cli("check", "--candidate", "spacy_md@3.8.0", "--baseline",
                          "spacy_sm@3.8.0", "--max-new-errors", "100000", "-w", root)
    assert code == 0, err
    report = tmp_path / "r.html"
    code, _out, err = cli("report", "-o", str(report), "-w", root)
    assert code == 0 and report.stat().st_size > 10_000, err
    with sysdiff.open(root) as wh:
        assert wh["scores"].height == n_scores
        assert wh.sql("select count(*) as n from units")["n"][0] > 0


@pytest.mark.parametrize(("name", "system"), [("sequoia", "spacy_sm@3.8.0"),
                                              ("litbank", "sys2")])
def test_rm_on_s3_equals_rm_on_disk(name, system, bucket, cli, tmp_path):  # noqa: F811
    """``sysdiff rm`` rewrites the files a removed system shares with others: on a store it
    reads them through the store (it once stopped with an internal error there)."""
    roots = (str(tmp_path / "wh"), f"{bucket}/wh")
    for root in roots:
        assert cli("run", str(CORPORA[name]), "-w", root)[0] == 0
        code, out, err = cli("rm", "--corpus", name, "--system", system, "--yes", "-w", root)
        assert code == 0 and out.startswith(f"removed {system}"), err
    local, store = sandbox_dumps(Path(roots[0])), sandbox_dumps(StoreURL(roots[1]))
    assert local and sorted(store) == sorted(local)
    assert {t for t in store if store[t] != local[t]} == set()
    assert system not in store["systems"]  # gone from the store as from the disk


def test_the_s3_sandbox_reads_only_the_warehouse(bucket, cli):  # noqa: F811
    root = f"{bucket}/wh"
    assert cli("run", str(BUNDLED["sequoia"]), "-w", root)[0] == 0
    StoreURL(f"{bucket}/secret.parquet").write_bytes(
        StoreURL(root).fs.cat_file(next(iter(
            f"{StoreURL(root).key}/{k}" for k in StoreURL(root).find() if k.endswith(".parquet")))))
    for sql in (f"select * from read_parquet('{bucket}/secret.parquet')",
                f"select * from read_parquet('{root}/tables/*/*/*.parquet')",
                "select * from read_csv('/etc/passwd')"):
        code, _out, err = cli("sql", sql, "-w", root)
        assert code == 2 and "refused" in err, (sql, err)


# ------------------------------------------------------------- crashes, concurrency

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample(tmp_path_factory.mktemp("s3-crash"), 30)


def args(files, root: str, names: list[str]) -> list[str]:
    return ["run", "--key", str(files["key"]), "--corpus", "s", "--task", "dep",
            "--ar-trials", "100", "-w", root, *[f"--system={n}={files[n]}" for n in names]]


def run_sysdiff(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), **env)
    return subprocess.run([sys.executable, "-c", "from sysdiff.flows.cli import main; main()",
                           *argv], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def uninterrupted(files, tmp_path_factory, prefect_harness):
    root = tmp_path_factory.mktemp("s3-ref") / "wh"
    assert run_cli(*args(files, str(root), ["a", "b"]))[0] == 0
    assert run_cli(*args(files, str(root), ["c"]))[0] == 0
    return sandbox_dumps(root)


def live_and_listed(root: StoreURL) -> tuple[set[str], set[str]]:
    """The files the latest manifest names, and the objects under tables/."""
    from sysdiff.flows.names import read_manifest

    manifest = read_manifest(root)
    live = {e["file"] for parts in manifest["tables"].values() for e in parts.values()}
    return live, {f"tables/{k}" for k in (root / "tables").find()}


@pytest.mark.parametrize("point", ["ingest", "compare", "commit-moving", "commit-manifest"])
def test_kill_on_s3_then_rerun(point, files, uninterrupted, bucket, cli,  # noqa: F811
                               monkeypatch):
    monkeypatch.setenv("SYSDIFF_STORE_GRACE", "0")  # superseded objects go at once
    root = f"{bucket}/wh"
    assert cli(*args(files, root, ["a", "b"]))[0] == 0
    before = sandbox_dumps(StoreURL(root))
    killed = run_sysdiff(args(files, root, ["c"]), SYSDIFF_CRASH_AT=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    after_kill = sandbox_dumps(StoreURL(root))  # readable, and all old or all new
    assert after_kill in (before, uninterrupted)
    assert (StoreURL(root) / LEASE).exists()  # the killed run's lease is left ...
    code, _out, err = cli(*args(files, root, ["c"]))  # ... and taken over: its pid is gone
    assert code == 0, err
    assert sandbox_dumps(StoreURL(root)) == uninterrupted
    objects = StoreURL(root).find()
    assert not any(k.startswith((STAGING, LEASE)) for k in objects)
    live, listed = live_and_listed(StoreURL(root))
    assert live == listed  # no orphans left behind


def test_a_second_writer_is_refused_while_the_lease_lives(files, bucket, cli):  # noqa: F811
    from sysdiff.flows.warehouse import warehouse_lock

    root = f"{bucket}/wh"
    assert cli(*args(files, root, ["a"]))[0] == 0
    before = sandbox_dumps(StoreURL(root))
    with warehouse_lock(StoreURL(root)):  # another run holds the warehouse
        code, _, err = cli(*args(files, root, ["b"]))
    assert code == 2 and "another sysdiff run is writing to this warehouse" in err
    assert sandbox_dumps(StoreURL(root)) == before


def test_two_writers_at_once_on_s3(files, uninterrupted, bucket, prefect_harness):  # noqa: F811
    """Two runs started together: one commits, the other is refused (exit 2) or commits
    after it; the warehouse is one of the states a serial order gives."""
    root = f"{bucket}/wh"
    assert run_cli(*args(files, root, ["a", "b"]))[0] == 0
    results: list = [None, None]

    def go(i: int) -> None:
        results[i] = run_sysdiff(args(files, root, ["c"]))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r.returncode for r in results)
    assert codes in ([0, 0], [0, 2]), [r.stderr[-500:] for r in results]
    for r in results:
        if r.returncode == 2:
            assert "another sysdiff run" in r.stderr
    assert sandbox_dumps(StoreURL(root)) == uninterrupted


def test_a_lost_lease_cannot_overwrite_a_commit(bucket, monkeypatch):  # noqa: F811
    """Safety does not rest on the lease: two runs that both started from version N (as if
    one's lease had been taken over) cannot both commit N + 1."""
    commit_from_one_version_twice(StoreURL(f"{bucket}/wh"), monkeypatch)


def test_readers_during_commits_on_s3(files, bucket, prefect_harness):  # noqa: F811
    """While runs commit, every read succeeds and sees one whole commit: the scores of
    2, then 3, then 4 systems, never a mix."""
    from sysdiff.flows.queries import query

    root = f"{bucket}/wh"
    assert run_cli(*args(files, root, ["a"]))[0] == 0
    seen: list[tuple[int, int]] = []
    errors: list[Exception] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                df = query(StoreURL(root), "select count(distinct system) as s, "
                           "count(*) as n from scores")
                seen.append((df["s"][0], df["n"][0]))
            except Exception as e:  # noqa: BLE001 (any failure is the test's finding)
                errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for name in ("b", "c"):
            result = run_sysdiff(args(files, root, [name]))
            assert result.returncode == 0, result.stderr
    finally:
        done.set()
        reader.join()
    assert not errors, errors[:3]
    per_systems = {}
    for systems, rows in seen:
        per_systems.setdefault(systems, set()).add(rows)
    final = query(StoreURL(root), "select count(distinct system) as s from scores")["s"][0]
    assert len(seen) > 3 and seen[-1][0] == final and len(per_systems) <= 3
    assert [s for s, _ in seen] == sorted(s for s, _ in seen)  # never back to an old state
    assert all(len(rows) == 1 for rows in per_systems.values()), per_systems  # whole commits
    assert json.loads((StoreURL(root) / LOG / "000000000003.json").read_bytes())["tables"]


def toml_on_store(name: str, prefix: str, out) -> str:  # noqa: ANN001 (a Path)
    """The run file of a bundled corpus with its key and systems uploaded under ``prefix``
    and named by URL (other files, e.g. a label map, stay local)."""
    import tomllib

    from sysdiff.flows.store import filesystem

    toml = CORPORA[name]
    text = toml.read_text()
    cfg = tomllib.loads(text)
    for rel in [cfg["key"], *cfg["systems"].values()]:
        url = f"{prefix}/{rel}"
        filesystem("s3").put_file(str(toml.parent / rel), url.split("://", 1)[1])
        text = text.replace(f'"{rel}"', f'"{url}"')
    if "map" in cfg:
        text = text.replace(f'"{cfg["map"]}"', f'"{toml.parent / cfg["map"]}"')
    out.write_text(text)
    return str(out)


@pytest.mark.parametrize("name", ["sequoia", "litbank", "unl", "ner", "ner-tsv"])
def test_inputs_on_s3(name, local_runs, bucket, cli, tmp_path):  # noqa: F811
    toml = toml_on_store(name, f"{bucket}/inputs", tmp_path / "run.toml")
    root = f"{bucket}/wh"
    code, _out, err = cli("run", toml, "-w", root)
    assert code == 0, err
    got = sandbox_dumps(StoreURL(root))
    assert {t for t in got if got[t] != local_runs[name].get(t)} == set()
    systems = query(StoreURL(root), "select path from systems")["path"].to_list()
    assert systems and all(p.startswith(f"{bucket}/inputs/") for p in systems)
    code, _out, err = cli("run", toml, "-w", root)  # unchanged objects are not read again
    assert code == 0, err
    code, _out, err = cli("run", "--key", f"{bucket}/inputs/nothing-here", "--task", "dep",
                          "--corpus", "x", f"--system=a={bucket}/inputs/nothing-either",
                          "-w", f"{bucket}/other")
    assert code == 2 and "nothing-here" in err and "no such" in err, err
    code, _out, err = cli("run", "--key", "ftp://host/key.conllu", "--task", "dep",
                          "--corpus", "x", "--system=a=ftp://host/a.conllu", "-w", root)
    assert code == 2 and "unsupported input URL scheme" in err, err


def test_bad_inputs_on_s3_are_told_in_the_runs_order(bucket, cli):  # noqa: F811
    """The heads of a run's inputs on a store are fetched at once; what is wrong is still
    told in the run's order: the key's error first, then the first bad system's, and with
    --keep-going one line per bad system, in order. Nothing is written."""
    from sysdiff.flows.store import filesystem

    fs, prefix = filesystem("s3"), f"{bucket}/bad-inputs"
    sequoia = REPO / "data/sequoia"
    objects = {"key.conllu": (sequoia / "key.conllu").read_bytes(),
               "a.conllu": (sequoia / "fr_core_news_md-3.8.0.conllu").read_bytes(),
               "empty.conllu": b"", "binary.conllu": b"1\tx\x00\n"}
    for name, data in objects.items():
        fs.pipe_file(f"{prefix}/{name}".split("://", 1)[1], data)
    systems = ["a=a.conllu", "gone=nothing.conllu", "empty=empty.conllu",
               "binary=binary.conllu"]
    argv = ["run", "--task", "dep", "--corpus", "c", "--ar-trials", "20",
            *[f"--system={n}={prefix}/{f}" for n, f in (s.split("=") for s in systems)]]
    root = f"{bucket}/bad-wh"
    code, _out, err = cli(*argv, "--key", f"{prefix}/empty.conllu", "-w", root)
    assert code == 2 and f"{prefix}/empty.conllu: file is empty" in err, err
    assert "nothing.conllu" not in err and "Traceback" not in err
    code, _out, err = cli(*argv, "--key", f"{prefix}/key.conllu", "-w", root)
    assert code == 2 and f"{prefix}/nothing.conllu: no such file" in err, err
    assert "empty.conllu" not in err and "binary.conllu" not in err
    code, _out, err = cli(*argv, "--key", f"{prefix}/key.conllu", "-w", root, "--keep-going")
    assert code == 3, err
    lines = [line for line in err.splitlines() if "skipped:" in line]
    assert [line.split("'")[1] for line in lines] == ["gone", "empty", "binary"], err
    assert "binary data (NUL byte)" in lines[2]
    assert query(StoreURL(root), "select distinct system from scores")["system"].to_list() \
        == ["a"]


def test_the_head_of_an_input_on_s3_is_one_small_request(bucket, monkeypatch):  # noqa: F811
    """Format detection reads an object's first MB with one ranged request (a file opened
    on the store read 50 MB ahead: every input's first 50 MB crossed the network before the
    run began); whether that is the whole object is told by one byte more."""
    from sysdiff.flows.sniff import HEAD_BYTES, read_head
    from sysdiff.flows.store import filesystem

    fs = filesystem("s3")
    asked: list[tuple[int, int]] = []
    cat_file = fs.cat_file

    def counting(path, start=None, end=None, **kw):  # noqa: ANN001, ANN003, ANN202
        asked.append((start, end))
        return cat_file(path, start=start, end=end, **kw)

    monkeypatch.setattr(fs, "cat_file", counting)
    monkeypatch.setattr(fs, "open", None)  # no file object: no read-ahead
    line = b"1\tx\tx\tX\t_\t_\t0\troot\t_\t_\n\n"
    for size in (1, HEAD_BYTES - 1, HEAD_BYTES, HEAD_BYTES + 1, 3 * HEAD_BYTES):
        data = (line * (size // len(line) + 1))[:size]
        url = StoreURL(f"{bucket}/heads/{size}.conllu")
        fs.pipe_file(url.key, data)
        asked.clear()
        head, whole = read_head(url, "tokens")
        assert head == data[:HEAD_BYTES] and whole == (size <= HEAD_BYTES), size
        assert asked == [(0, min(size, HEAD_BYTES + 1))], asked


@pytest.mark.parametrize(("block", "kept"), [(None, None), (1000, None), (1000, 0)])
def test_a_large_input_on_s3_is_read_once_range_by_range(block, kept, local_runs, bucket,  # noqa: F811
                                                        cli, tmp_path, monkeypatch):
    """A system file cut into ranges is read from the store once, in order (hashed, cut and
    each range read as its bytes come in), not a plan pass and then its ranges: the same
    tables as the local run, each system object's bytes fetched exactly once. Read with the
    key, its task stages it from the pieces it kept: none crosses the store (only the
    systems started on the key's frame, at most one per core, leave theirs for the
    assembly); past ``KEPT_BYTES`` (0 here) it leaves them and reads them back."""
    import sysdiff.flows.token_ingest as ingest
    from sysdiff.schemas.formats import stable

    fetched: dict[str, int] = {}
    pieces: dict[str, int] = {}
    left: dict[str, int] = {}
    read_at, lean_piece = stable.StoreObject.read_at, ingest.lean_piece
    leave_piece = ingest.leave_piece

    def counting_read(self, offset, n, consume=False):  # noqa: ANN001, ANN202
        data = read_at(self, offset, n, consume)
        fetched[self.url] = fetched.get(self.url, 0) + len(data)
        return data

    def counting_piece(job, *rest):  # noqa: ANN001, ANN202
        pieces[job.source.id] = pieces.get(job.source.id, 0) + 1
        return lean_piece(job, *rest)

    def counting_leave(job, *rest):  # noqa: ANN001, ANN202
        left[job.source.id] = left.get(job.source.id, 0) + 1
        return leave_piece(job, *rest)

    monkeypatch.setattr(stable.StoreObject, "read_at", counting_read)
    monkeypatch.setattr(ingest, "lean_piece", counting_piece)
    monkeypatch.setattr(ingest, "leave_piece", counting_leave)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")
    if block:  # ranges across blocks (by default a block holds each file here whole)
        monkeypatch.setattr(ingest, "PLAN_BLOCK", block)
    if kept is not None:
        monkeypatch.setattr(ingest, "KEPT_BYTES", kept)
    toml = toml_on_store("sequoia", f"{bucket}/inputs", tmp_path / "run.toml")
    code, _out, err = cli("run", toml, "-w", f"{bucket}/wh")
    assert code == 0, err
    got = sandbox_dumps(StoreURL(f"{bucket}/wh"))
    assert {t for t in got if got[t] != local_runs["sequoia"].get(t)} == set()
    systems = query(StoreURL(f"{bucket}/wh"), "select system, path, size from systems "
                    "where system != '__key__'").rows()
    assert len(systems) == 4 and len(pieces) == 4 and min(pieces.values()) > 5, pieces
    for _system, path, size in systems:
        assert fetched[path] == size, (path, fetched[path], size)
    if kept == 0:
        assert left == pieces
    else:
        assert all(left.get(s, 0) in (0, pieces[s]) for s in pieces), (left, pieces)
        assert sum(left.get(s, 0) == 0 for s in pieces) >= 4 - (os.cpu_count() or 1), left


def _odd(data: bytes, case: str) -> bytes:
    """A system file as the case has it: CR LF line ends; a comment with a tab (the fast
    reader leaves it to the full reader) before the last sentence, past the first ranges."""
    if case == "crlf":
        return data.replace(b"\n", b"\r\n")
    if case == "late comment with a tab":
        at = data.rstrip(b"\n").rindex(b"\n\n") + 2
        return data[:at] + b"# note\twith a tab\n" + data[at:]
    return data


def around_the_longest_sentence(data: bytes, before: int = 50, after: int = 50) -> bytes:
    """The sentences of a file of the bundled sample around its longest (8.7 kB, the 350th
    of 457 in each file): ranges of a few kB before and after it, in a fifth of the file."""
    sentences = data.split(b"\n\n")
    at = max(range(len(sentences)), key=lambda i: len(sentences[i]))
    return b"\n\n".join(sentences[max(0, at - before):at + after + 1]).strip(b"\n") + b"\n\n"


@pytest.mark.parametrize("case", ["crlf", "huge sentence", "late comment with a tab"])
def test_a_large_input_on_s3_not_cut_is_read_whole(case, bucket, cli, tmp_path,  # noqa: F811
                                                   monkeypatch):
    """A large file on a store that cannot be cut as it streams (CR LF line ends; no cut
    within ``HELD_BYTES`` or 4 ranges: a sentence of 8.7 kB, 6000 bytes here), or whose last
    range the fast reader cannot vouch for after the first were read, is read by the full
    reader: the same tables as the same files run from the local disk."""
    import sysdiff.flows.token_ingest as ingest
    from sysdiff.flows.store import filesystem

    folder = BUNDLED["sequoia"].parent
    names = {"key": "key.conllu", "sm": "fr_core_news_sm-3.8.0.conllu",
             "md": "fr_core_news_md-3.8.0.conllu"}
    local = {}
    for name, file in names.items():
        data = around_the_longest_sentence((folder / file).read_bytes())
        local[name] = tmp_path / file
        local[name].write_bytes(_odd(data, case) if name == "sm" else data)
        filesystem("s3").put_file(str(local[name]), f"{bucket}/in/{file}".split("://")[1])
    # ranges of 1500 bytes: the 8.7 kB sentence outgrows 4 of them, and the other files are
    # not read a sentence a range (their time: benchmarks/RESULTS.md)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "1500" if case == "huge sentence" else "3000")
    monkeypatch.setattr(ingest, "PLAN_BLOCK", 1000)
    monkeypatch.setattr(ingest, "HELD_BYTES", 1100)
    read = []  # (file, vouched) of each piece, in order
    lean_piece = ingest.lean_piece

    def spy(job, data, *args):  # noqa: ANN001, ANN002
        got = lean_piece(job, data, *args)
        read.append((str(job.source.path), got is not None))
        return got

    monkeypatch.setattr(ingest, "lean_piece", spy)

    def run(where: dict[str, str], root: str) -> None:
        code, _out, err = cli("run", "--key", where["key"], "--task", "dep", "--corpus", "c",
                              "--ar-trials", "100", "-w", root,
                              *[f"--system={n}={where[n]}" for n in ("sm", "md")])
        assert code == 0, err

    run({n: str(p) for n, p in local.items()}, str(tmp_path / "wh"))
    run({n: f"{bucket}/in/{f}" for n, f in names.items()}, f"{bucket}/wh")
    want, got = sandbox_dumps(tmp_path / "wh"), sandbox_dumps(StoreURL(f"{bucket}/wh"))
    assert sorted(got) == sorted(want) and {t for t in want if got[t] != want[t]} == set()
    layouts = query(StoreURL(f"{bucket}/wh"), "select distinct system from stored.units")
    assert "sm" in layouts["system"].to_list()  # read in full (lean systems have no units)
    sm = [vouched for path, vouched in read if path == f"{bucket}/in/{names['sm']}"]
    if case == "late comment with a tab":  # ranges read fast, then one not
        assert sm[-1] is False and sum(sm) >= 2, sm


def test_serve_once_into_s3(bucket, cli, tmp_path):  # noqa: F811
    from tests.conftest import SEQUOIA
    from tests.test_scale import first_sentences

    corpus = tmp_path / "watch" / "seq"
    (corpus / "systems").mkdir(parents=True)
    first_sentences(SEQUOIA / "key.conllu", corpus / "key.conllu", 30)
    first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", corpus / "systems" / "sm.conllu",
                    30)
    (corpus / "corpus.toml").write_text('task = "dep"\nar_trials = 100\n')
    root = f"{bucket}/wh"
    code, _out, err = cli("serve", "--watch", str(tmp_path / "watch"), "--once", "-w", root)
    assert code == 0, err
    assert query(StoreURL(root), "select count(*) as n from scores where corpus = 'seq'"
                 )["n"][0] > 0
    assert not (tmp_path / "watch" / "s3:").exists()
