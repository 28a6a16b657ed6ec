"""A Dask cluster with no shared disk (issue 22): a scheduler and 2 worker processes, each
worker in its own temporary folder (its working directory, TMPDIR and Dask's local
directory), started by the test; inputs and warehouse on the S3 server. A worker refuses
to open any path of the client's folders (``tests/dask_forbid.py``): the run must read its
inputs and write its staged files through the object store only, and give the tables of the
local-disk run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from sysdiff.flows.store import StoreURL, filesystem
from tests.conftest import REPO, run_cli
from tests.objstore import bucket, free_port, s3_env, wait_for_port  # noqa: F401 (fixtures)
from tests.snapshot import sandbox_dumps
from tests.test_scale import sample


@pytest.fixture
def cluster(s3_env, tmp_path_factory, prefect_harness):  # noqa: F811
    """tcp://127.0.0.1:PORT of a scheduler with 2 single-thread workers; yields (address,
    the workers' folders)."""
    from prefect.settings import PREFECT_API_URL

    port = free_port()
    forbid = os.pathsep.join([str(REPO / "data"), str(REPO / "tests" / "data"),
                              str(tmp_path_factory.getbasetemp())])
    procs, folders = [], []
    base = dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), POLARS_MAX_THREADS="1")
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", str(port), "--dashboard-address", ":0", "--no-show"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_port(port, procs[0])
        for i in range(2):
            folder = Path(os.path.realpath(
                __import__("tempfile").mkdtemp(prefix=f"sysdiff-worker{i}-")))
            folders.append(folder)
            env = dict(base, TMPDIR=str(folder), SYSDIFF_TEST_FORBID=forbid,
                       PYTHONPATH=str(REPO))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker",
                 f"tcp://127.0.0.1:{port}", "--nworkers", "1", "--nthreads", "1",
                 "--local-directory", str(folder), "--no-dashboard",
                 "--preload", "tests.dask_forbid", "--name", f"w{i}"],
                cwd=folder, env=env, stdout=open(folder / "worker.log", "wb"),  # noqa: SIM115
                stderr=subprocess.STDOUT))
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield f"tcp://127.0.0.1:{port}", folders
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        import shutil

        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def upload(files: dict[str, Path], prefix: str) -> dict[str, str]:
    """The files copied to the store: name -> URL."""
    fs = filesystem("s3")
    out = {}
    for name, path in files.items():
        url = f"{prefix}/{path.name}"
        fs.put_file(str(path), url.split("://", 1)[1])
        out[name] = url
    return out


def run_local_and_on_cluster(cluster, files: dict[str, Path], bucket: str,  # noqa: ANN001, F811
                             tmp_path: Path) -> tuple[Path, str]:
    """The sample run on the local disk, then from the store on the cluster: no client
    path reaches the workers, and the tables are the same. (local root, store root)"""
    address, folders = cluster
    urls = upload(files, f"{bucket}/inputs")
    argv = ["--corpus", "s", "--task", "dep", "--ar-trials", "100"]
    local = tmp_path / "local-wh"
    code, _, err = run_cli("run", "--key", str(files["key"]), *argv, "-w", str(local),
                           *[f"--system={n}={p}" for n, p in files.items() if n != "key"])
    assert code == 0, err
    root = f"{bucket}/wh"
    code, _, err = run_cli("run", "--key", urls["key"], *argv, "-w", root,
                           "--dask-address", address,
                           *[f"--system={n}={u}" for n, u in urls.items() if n != "key"])
    logs = {f.name: (f / "forbidden.log").read_text() for f in folders
            if (f / "forbidden.log").exists()}
    assert not logs, f"client paths reached the workers: {logs}"
    assert code == 0, err
    assert sandbox_dumps(StoreURL(root)) == sandbox_dumps(local)
    return local, root


def test_a_run_on_a_cluster_without_a_shared_disk(cluster, bucket, tmp_path):  # noqa: F811
    run_local_and_on_cluster(cluster, sample(tmp_path, 40), bucket, tmp_path)
    address, folders = cluster
    from distributed import Client

    with Client(address) as client:  # both workers ran tasks
        done = client.run(lambda dask_worker: dask_worker.state.transition_counter)
    assert len(done) == 2 and all(n > 0 for n in done.values()), done
    ner_run_on_the_cluster(address, folders, bucket, tmp_path)


@pytest.fixture
def small_ranges(monkeypatch):
    """3000-byte ranges, set before the cluster's workers start (they inherit it)."""
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")


def test_large_inputs_read_once_on_a_cluster(small_ranges, cluster, bucket, tmp_path):  # noqa: F811
    """System files cut into ranges, on the store: each read once by a task on a worker
    (``stream_file``: the key's sentence counts read there from the store), the tables the
    local run's."""
    files = sample(tmp_path, 40)
    assert min(p.stat().st_size for p in files.values()) > 10 * 3000  # cut in ranges
    local, root = run_local_and_on_cluster(cluster, files, bucket, tmp_path)
    full = "select distinct system from stored.units order by 1"  # systems not stored lean
    assert query(StoreURL(root), full).equals(query(local, full))
    assert query(local, full)["system"].len() < len(files)  # some are lean


def ner_run_on_the_cluster(address: str, folders: list[Path], store: str, tmp_path: Path
                           ) -> None:
    """The NER sample with the key in the systems' format on the same cluster: the systems
    read fast and stored lean by the workers, every table the local run's."""
    ner = REPO / "data" / "ner"
    files = {"key": ner / "gold.tsv", "a": ner / "spacy_sm-3.6.0.tsv",
             "b": ner / "spacy_sm-3.8.0.tsv"}
    urls = upload(files, f"{store}/ner")
    argv = ["--corpus", "uner", "--task", "ner", "--map", str(ner / "map.tsv"),
            "--ar-trials", "100"]
    runs = {"local": (files, tmp_path / "ner-local", ()),
            "cluster": (urls, f"{store}/ner-wh", ("--dask-address", address))}
    dumps = {}
    for name, (inputs, root, extra) in runs.items():
        code, _, err = run_cli("run", "--key", str(inputs["key"]), *argv, "-w", str(root),
                               *extra, *[f"--system={n}={p}" for n, p in inputs.items()
                                         if n != "key"])
        assert code == 0, err
        where = StoreURL(root) if name == "cluster" else root
        lean = query(where, "select distinct system from stored.span_words order by 1")
        assert lean["system"].to_list() == ["a", "b"]
        dumps[name] = sandbox_dumps(where)
    assert not [f for f in folders if (f / "forbidden.log").exists()]
    assert dumps["cluster"] == dumps["local"]


def test_a_file_of_the_client_is_refused_for_a_cluster_by_address(bucket, tmp_path):  # noqa: F811
    """With the warehouse on a store and a cluster by address, an input given as a local
    path would be looked for on the workers' disks: one line, exit 2, nothing written (the
    refusal comes before any connection: the address here has no scheduler)."""
    files = sample(tmp_path, 5)
    urls = upload({"key": files["key"]}, f"{bucket}/inputs")
    root = f"{bucket}/wh"
    code, out, err = run_cli("run", "--key", urls["key"], "--corpus", "s", "--task", "dep",
                             "-w", root, "--dask-address", "tcp://127.0.0.1:9",
                             f"--system=a={files['a']}")
    assert code == 2, err
    assert f"{files['a']}: a file of this machine" in err
    assert "share no disk" in err and "Traceback" not in err + out
    assert not filesystem("s3").exists(root.split("://", 1)[1] + "/_log")
