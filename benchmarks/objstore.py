"""The warehouse on an object store, end to end: 10M tokens x 10 systems (issue 22).

In one invocation, on the same data (``benchmarks/scale.py``'s generator, or ``--data`` of
files already written): a run with the warehouse on the local disk, the same run with the
warehouse on a local S3 server (moto in server mode on 127.0.0.1, started here), then whole
runs (ingest included) on a local Dask cluster of 1 and of 2 worker processes with the
warehouse and the inputs on the S3 server (no shared disk). Each run is a fresh warehouse.
Not for CI.

    python benchmarks/objstore.py --data /path/to/10Mx10 [--skip-dask] [--inputs local]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.scale import generate, parse_size, run_sysdiff  # noqa: E402
from tests.objstore import s3_server_process  # noqa: E402


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


def server_cpu() -> float:
    """CPU seconds used so far by the S3 server (this process's moto child)."""
    import psutil

    procs = [p for p in psutil.Process().children(recursive=True)
             if "moto.server" in " ".join(p.cmdline())]
    return sum(sum(p.cpu_times()[:2]) for p in procs)


def timed(label: str, args: list[str]) -> dict:
    load = os.getloadavg()[0]
    busy0, total0 = cpu_busy()
    s3_0 = server_cpu()
    wall, rss, steps = run_sysdiff(args)
    busy1, total1 = cpu_busy()
    row = {"run": label, "wall_s": round(wall, 1), "ingest_s": steps.get("ingest"),
           "compare_s": steps.get("compare"), "peak_rss_gib": round(rss, 2),
           "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
           # the share of all cores busy during the run (every process), and the CPU
           # seconds the S3 server took of it: what bounds a speed-up from more workers
           "cores_busy": round((busy1 - busy0) / (total1 - total0), 2),
           "s3_server_cpu_s": round(server_cpu() - s3_0, 1)}
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
    ap.add_argument("--skip-dask", action="store_true")
    args = ap.parse_args()
    paths = generate(Path(args.data), parse_size(args.size), args.systems)
    local_inputs = {k: str(p) for k, p in paths.items()}
    rows = []
    with s3_server_process() as env:
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
            for n in (1, 2):
                rows.append(timed(f"S3 warehouse, inputs {args.inputs}, Dask {n} worker(s)",
                                  argv(inputs, f"s3://{bucket}/wh-dask{n}",
                                       ["--dask-local", str(n)])))
    print(f"\n{'run':<45} {'wall s':>8} {'ingest s':>9} {'compare s':>10} {'RSS GiB':>8} "
          f"{'load':>10} {'busy':>5} {'S3 cpu s':>9}")
    for r in rows:
        print(f"{r['run']:<45} {r['wall_s']:8.1f} {r['ingest_s'] or 0:9.1f} "
              f"{r['compare_s'] or 0:10.1f} {r['peak_rss_gib']:8.2f} "
              f"{r['load_before']:>4}->{r['load_after']:<4} {r['cores_busy']:5.0%} "
              f"{r['s3_server_cpu_s']:9.1f}")
    by = {r["run"]: r for r in rows}
    print(f"S3 / local disk: {by['S3 warehouse, threads']['wall_s'] / rows[0]['wall_s']:.2f}x")
    dask = [r for r in rows if "Dask" in r["run"]]
    if len(dask) == 2:
        speedup = dask[0]["wall_s"] / dask[1]["wall_s"]
        print(f"Dask 1 worker / 2 workers (whole run): {speedup:.2f}x")


if __name__ == "__main__":
    main()
