"""The warehouse on an object store, end to end: 10M tokens x 10 systems (issue 22).

In one invocation, on the same data (``benchmarks/scale.py``'s generator, or ``--data`` of
files already written): a run with the warehouse on the local disk, the same run with the
warehouse on a local S3 server (on 127.0.0.1, started here: moto in server mode, or
SeaweedFS with ``--s3-server seaweedfs``), then whole
runs (ingest included) on a local Dask cluster of 1 and of 2 worker processes with the
warehouse and the inputs on the S3 server (no shared disk). Each run is a fresh warehouse.
Not for CI.

    python benchmarks/objstore.py --data /path/to/10Mx10 [--skip-dask] [--inputs local]
                                  [--repeat N] [--s3-server moto|seaweedfs]

The S3 server runs on the same 2 cores as the workers, so its CPU bounds what a second
worker can win. moto is a Python mock; SeaweedFS (``weed``, from the ``bench`` extra) is a
compiled server, nearer to the S3 or MinIO of a cluster, which run on machines of their own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.scale import generate, parse_size, prefect_api, run_sysdiff  # noqa: E402
from tests.objstore import SERVERS, s3_server_process  # noqa: E402


def upload(paths: dict[str, Path], prefix: str) -> tuple[dict[str, str], float]:
    """The files copied to the store (name -> URL) and the seconds it took."""
    from sysdiff.flows.store import filesystem

    fs = filesystem("s3")
    t0 = time.perf_counter()
    urls = {}
    for name, path in paths.items():
        url = f"{prefix}/{path.name}"
        fs.put_file(str(path), url.split("://", 1)[1])
        urls[name] = url
    return urls, time.perf_counter() - t0


def argv(inputs: dict[str, str], warehouse: str, extra: list[str]) -> list[str]:
    return ["run", "-v", "--key", inputs["key"], "--corpus", "bench", "--task", "pos",
            "--ar-trials", "1000", "--shard-sents", "20000", "-w", warehouse,
            *[f"--system={k}={p}" for k, p in inputs.items() if k != "key"], *extra]


def cpu_busy() -> tuple[float, float]:
    """The machine's busy and total CPU seconds since boot, all cores (``/proc/stat``)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / tick, sum(fields) / tick


ROLES = ("client", "workers", "prefect", "s3")


def role(cmdline: str) -> str:
    """Which part of the run a process is: the sysdiff client, Prefect's server, the S3
    server, or (anything else the client started) the Dask workers."""
    if "moto.server" in cmdline or "weed mini" in cmdline:
        return "s3"
    if "sysdiff.flows.cli" in cmdline:
        return "client"
    if "uvicorn" in cmdline or "prefect.server" in cmdline or "server start" in cmdline:
        return "prefect"
    return "workers"


def background_server() -> list:
    """sysdiff's background Prefect server and its children, when the runs report to it
    (not a descendant of this process, but its CPU is the run's as much as a temporary
    server's would be)."""
    import psutil

    from sysdiff.flows.server import running

    server = None if os.environ.get("SYSDIFF_SERVER") == "off" else running()
    if server is None:
        return []
    try:
        root = psutil.Process(server.pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class CpuByRole:
    """CPU seconds per part of the run, read off this process's descendants every 0.2 s
    (a process that ends between two readings loses at most 0.2 s of its time)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[str, float]] = {}
        self.start: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def read(self) -> dict[int, tuple[str, float]]:
        import psutil

        out = {}
        for proc in [*psutil.Process().children(recursive=True), *background_server()]:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    out[proc.pid] = (role(" ".join(proc.cmdline())), times.user + times.system)
            except psutil.Error:
                continue
        return out

    def sample(self) -> None:
        while not self.stop.wait(0.2):
            self.seen.update(self.read())

    def __enter__(self) -> CpuByRole:
        self.start = {pid: cpu for pid, (_r, cpu) in self.read().items()}
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.seen.update(self.read())

    def seconds(self) -> dict[str, float]:
        totals = dict.fromkeys(ROLES, 0.0)
        for pid, (name, cpu) in self.seen.items():
            totals[name] += cpu - self.start.get(pid, 0.0)
        return {name: round(cpu, 1) for name, cpu in totals.items()}


def timed(label: str, args: list[str]) -> dict:
    load = os.getloadavg()[0]
    busy0, total0 = cpu_busy()
    with CpuByRole() as cpu:
        wall, rss, steps = run_sysdiff(args)
    busy1, total1 = cpu_busy()
    row = {"run": label, "wall_s": round(wall, 1), "ingest_s": steps.get("ingest"),
           "compare_s": steps.get("compare"), "peak_rss_gib": round(rss, 2),
           "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
           # the share of all cores busy during the run (every process), and the CPU
           # seconds of each part: what bounds a speed-up from more workers
           "cores_busy": round((busy1 - busy0) / (total1 - total0), 2),
           "cpu_s": cpu.seconds()}
    print(row, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data" / "10Mx10"))
    ap.add_argument("--size", default="10M")
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / "_data"),
                    help="where the local warehouse goes")
    ap.add_argument("--inputs", choices=["s3", "local"], default="s3",
                    help="where the Dask runs read the inputs (s3: no shared disk)")
    ap.add_argument("--s3-server", choices=SERVERS, default="moto",
                    help="the local S3 server (seaweedfs: pip install -e '.[bench]')")
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="pairs of 1- and 2-worker Dask runs (interleaved; medians reported)")
    args = ap.parse_args()
    print(f"Prefect API: {prefect_api()}; S3 server: {args.s3_server}", flush=True)
    paths = generate(Path(args.data), parse_size(args.size), args.systems)
    local_inputs = {k: str(p) for k, p in paths.items()}
    rows = []
    with s3_server_process(args.s3_server) as env:
        os.environ.update(env)
        from sysdiff.flows.store import filesystem

        bucket = f"bench{uuid.uuid4().hex[:8]}"
        filesystem("s3").mkdir(bucket)
        wh = Path(args.work) / f"wh-objstore-{uuid.uuid4().hex[:8]}"
        try:
            rows.append(timed("local disk, threads", argv(local_inputs, str(wh), [])))
        finally:
            os.system(f"rm -rf '{wh}'")
        rows.append(timed("S3 warehouse, threads", argv(local_inputs, f"s3://{bucket}/wh1", [])))
        if not args.skip_dask:
            inputs = local_inputs
            if args.inputs == "s3":
                inputs, up = upload(paths, f"s3://{bucket}/inputs")
                print({"upload_s": round(up, 1)}, flush=True)
            for k in range(args.repeat):  # 1 and 2 workers alternate
                for n in (1, 2):
                    rows.append(timed(f"S3 warehouse, inputs {args.inputs}, Dask {n} worker(s)",
                                      argv(inputs, f"s3://{bucket}/wh-dask{n}-{k}",
                                           ["--dask-local", str(n)])))
    print(f"\n{'run':<45} {'wall s':>8} {'ingest s':>9} {'compare s':>10} {'RSS GiB':>8} "
          f"{'load':>10} {'busy':>5}  CPU s: " + " ".join(f"{r:>8}" for r in ROLES))
    for r in rows:
        print(f"{r['run']:<45} {r['wall_s']:8.1f} {r['ingest_s'] or 0:9.1f} "
              f"{r['compare_s'] or 0:10.1f} {r['peak_rss_gib']:8.2f} "
              f"{r['load_before']:>4}->{r['load_after']:<4} {r['cores_busy']:5.0%}         "
              + " ".join(f"{r['cpu_s'][name]:8.1f}" for name in ROLES))
    by = {r["run"]: r for r in rows}
    print(f"S3 / local disk: {by['S3 warehouse, threads']['wall_s'] / rows[0]['wall_s']:.2f}x")
    one = [r["wall_s"] for r in rows if "Dask 1 " in r["run"]]
    two = [r["wall_s"] for r in rows if "Dask 2 " in r["run"]]
    if one and two:
        print(f"Dask 1 worker / 2 workers (whole run, medians of {len(one)}): "
              f"{statistics.median(one):.1f} / {statistics.median(two):.1f} s = "
              f"{statistics.median(one) / statistics.median(two):.2f}x "
              f"(pairs: {', '.join(f'{a / b:.2f}x' for a, b in zip(one, two, strict=True))})")


if __name__ == "__main__":
    main()
