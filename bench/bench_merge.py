"""Benchmark: ``alisio eval merge`` of 4 shards of a 10,000-run scripted job (targets: under 10 s and 300 MB).

Run: ``.venv/bin/python bench/bench_merge.py [--tasks T] [--k K] [--shards N]``. A real scripted run of
smoke-coding's fix-add gives the template: its record, its transcript and its report's conditions. The job is
T tasks x K repetitions (100 x 100) cut into N shards by ``slice_plan``, each shard an ordinary shard output
(plan.json with its shard block, runs.jsonl in a shuffled finishing order, report.json, and one transcript file
per run, every 7th run a fail), as ``eval run --shard`` writes it. Times the installed ``alisio eval merge`` in a
new process (reading and checking the shards, pooling 10,000 records, linking 10,000 transcripts, writing
runs.jsonl, report.json, report.md and report.html), best of 3, and its peak resident memory (the child's
``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from alisio.core.lab.plans.manifest import decode_manifest, encode_manifest
from alisio.core.lab.plans.merge import plan_of_manifest
from alisio.core.lab.plans.plan_key import plan_digest
from alisio.core.lab.plans.shards import ShardBlock, ShardChoice, owned_runs, slice_plan
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.reports.report_json import decode_report, encode_report
from alisio.core.lab.runs.records import RunStatus, decode_runs, encode_runs
from alisio.core.lab.runs.transcript import transcript_path

ROOT = Path(__file__).resolve().parents[1]
ALISIO = Path(sys.executable).with_name("alisio")
MAX_SECONDS = 10.0
MAX_MB = 300.0


def _template(work: Path, env: dict[str, str]) -> Path:
    """A real scripted run of fix-add, once: the record, transcript and conditions every synthetic run copies."""
    out = work / "template"
    subprocess.run(
        [str(ALISIO), "eval", "run", "smoke-coding", "--tasks", "fix-add", "-k", "1", "--script",
         str(ROOT / "suites" / "smoke-coding" / "scripts"), "--allow-write", "--allow-process", "--out", str(out), "-q"],
        check=True, capture_output=True, env=env, cwd=ROOT,
    )  # fmt: skip
    return out


def _shards(work: Path, template: Path, tasks: int, k: int, count: int) -> list[Path]:
    """Write ``count`` shard outputs of a ``tasks`` x ``k`` job modelled on ``template``."""
    record = decode_runs((template / "runs.jsonl").read_bytes(), "template").unwrap()[0]
    transcript = (template / transcript_path("fix-add", 0)).read_bytes()
    base = decode_report((template / "report.json").read_bytes(), "template").unwrap()
    manifest = decode_manifest((template / "plan.json").read_bytes(), "template").unwrap()
    ids = tuple(f"task-{n:03d}" for n in range(tasks))
    manifest = msgspec.structs.replace(manifest, tasks=ids, k=k)
    plan = plan_of_manifest(manifest).unwrap()
    manifest = msgspec.structs.replace(manifest, digest=plan_digest(manifest, plan))
    conditions = msgspec.structs.replace(base.conditions, k=k)
    outs = []
    for index in range(1, count + 1):
        mine = slice_plan(plan, ShardChoice(index=index, count=count)).unwrap()
        out = work / f"shard-{index}"
        block = ShardBlock(
            digest=manifest.digest or "",
            index=index,
            count=count,
            planned_runs=len(plan),
            runs=owned_runs(mine),
        )
        records = [
            msgspec.structs.replace(
                record, task_id=s.task_id, repetition=s.repetition, seed=s.seed,
                status=RunStatus.FAIL if (s.repetition + len(s.task_id)) % 7 == 0 else RunStatus.PASS,
            )
            for s in mine
        ]  # fmt: skip
        random.Random(index).shuffle(records)  # the order they finished in
        for r in records:
            path = out / transcript_path(r.task_id, r.repetition)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(transcript)
        (out / "runs.jsonl").write_bytes(encode_runs(records))
        run_id = f"2026-01-01T00-00-0{index}-000Z"
        shard_conditions = msgspec.structs.replace(conditions, run_id=run_id)
        report = build_report(records, shard_conditions, planned_runs=len(records))
        (out / "report.json").write_bytes(encode_report(report))
        shard_manifest = msgspec.structs.replace(manifest, shard=block, run_id=run_id)
        (out / "plan.json").write_bytes(encode_manifest(shard_manifest))
        outs.append(out)
    return outs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="alisio-bench-merge-") as tmp:
        work = Path(tmp)
        env = {
            "PATH": "/usr/bin:/bin",
            "ALISIO_CONFIG_HOME": str(work / "config"),
            "ALISIO_DATA_HOME": str(work / "data"),
            "HOME": str(work),
        }
        shards = _shards(work, _template(work, env), args.tasks, args.k, args.shards)
        size = sum(p.stat().st_size for s in shards for p in s.rglob("*") if p.is_file())
        best = float("inf")
        for attempt in range(3):
            out = work / f"merged-{attempt}"
            start = time.perf_counter()
            done = subprocess.run(
                [str(ALISIO), "eval", "merge", *map(str, shards), "--out", str(out)],
                capture_output=True, text=True, env=env, check=False,
            )  # fmt: skip
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"eval merge failed ({done.returncode}): {done.stderr}")
            best = min(best, elapsed)
            shutil.rmtree(out)
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    runs = args.tasks * args.k
    print(
        f"eval merge: {args.shards} shards of a {runs:,}-run scripted job ({size / 1e6:.0f} MB of shard output)"
    )
    print(
        f"  best of 3: {best:.2f} s (target {MAX_SECONDS:g} s); peak resident memory {peak_mb:.0f} MB (target {MAX_MB:g} MB)"
    )


if __name__ == "__main__":
    main()
