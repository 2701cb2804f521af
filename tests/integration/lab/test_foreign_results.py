"""``eval compare`` and ``eval stability`` of results from other harnesses: Inspect AI logs and Harbor jobs.

The Inspect logs in tests/fixtures/inspect are real: written by inspect-ai 0.3.285 with its mock model
(make_logs.py beside them; the slow test writes them again with the real tool and checks they read the same).
Harbor job directories are built here from Harbor's documented layout (a trial directory per trial, each with
the result.json of its ``TrialResult``): Harbor itself is not on PyPI and needs Docker to run a trial.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import alisio

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "inspect"
INSPECT_PYTHON = Path(__file__).resolve().parents[3] / ".agents" / "inspect" / "bin" / "python"


def _compare(home: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = alisio(home, "eval", "compare", *args, "--json")
    return result, (json.loads(result.stdout) if result.returncode == 0 else {})


def _tasks(comparison: dict[str, Any]) -> dict[str, tuple[str, int, int, int, int]]:
    """Each task's outcome and its passes/judged on both sides."""
    out = {}
    for task in comparison["tasks"]:
        base, cand = task["baseline"], task["candidate"]
        out[task["taskId"]] = (
            task["outcome"],
            base["passes"],
            base["judged"],
            cand["passes"],
            cand["judged"],
        )
    return out


def test_two_inspect_logs_compare_with_verdicts(tmp_path: Path) -> None:
    result, comparison = _compare(tmp_path, LOGS / "baseline.eval", LOGS / "candidate.eval")
    assert result.returncode == 0, result.stderr
    assert _tasks(comparison) == {
        "add": ("inconclusive", 5, 5, 5, 5),
        "mul": ("improved", 0, 5, 5, 5),
        "sub": ("inconclusive", 4, 5, 5, 5),
    }
    conditions = comparison["candidate"]
    assert (conditions["suiteId"], conditions["suiteVersion"], conditions["model"]) == (
        "arith",
        "2",
        "mockllm/model",
    )
    assert conditions["agent"] == {"name": "generate", "kind": "inspect", "version": "0.3.285"}
    assert conditions["k"] == 5 and conditions["label"] == "Inspect AI log candidate.eval"
    text = alisio(
        tmp_path, "eval", "compare", LOGS / "baseline.eval", LOGS / "candidate.eval", "--format", "md"
    )
    assert "| mul | **improved** | 0/5: 0.0% [0.0%, 43.4%] | 5/5: 100.0% [56.6%, 100.0%] |" in text.stdout


def test_an_inspect_json_log_reads_as_its_eval_twin(tmp_path: Path) -> None:
    result, comparison = _compare(tmp_path, LOGS / "candidate.eval", LOGS / "candidate.json")
    assert result.returncode == 0, result.stderr
    assert {t: o[1:] for t, o in _tasks(comparison).items()} == {
        t: (5, 5, 5, 5) for t in ("add", "mul", "sub")
    }
    assert comparison["candidate"]["suiteHash"] == comparison["baseline"]["suiteHash"]


def test_stability_reads_inspect_logs(tmp_path: Path) -> None:
    result = alisio(tmp_path, "eval", "stability", LOGS / "baseline.eval", LOGS / "candidate.eval", "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert "mul" in found["unstable"] and "add" not in found["unstable"]


def test_power_plans_from_an_inspect_log(tmp_path: Path) -> None:
    """``eval power --from`` an Inspect log: its 3 tasks at k=5, suite rate 60%, plan from the measured
    within-task variance."""
    result = alisio(tmp_path, "eval", "power", "--from", LOGS / "baseline.eval", "--detect", "0.2")
    assert result.returncode == 0, result.stderr
    assert "(3 tasks, k=5): suite rate 60.0%" in result.stdout
    assert "To detect 60.0% -> 80.0% (+20.0 pp)" in result.stdout


def _rescored(tmp: Path, change: Any, name: str = "rescored") -> Path:
    """candidate.json with ``change(sample)`` applied to every sample."""
    log = json.loads((LOGS / "candidate.json").read_text())
    for sample in log["samples"]:
        change(sample)
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(log))
    return path


def test_a_score_that_is_not_pass_fail_needs_a_threshold(tmp_path: Path) -> None:
    def partial(sample: dict[str, Any]) -> None:
        if sample["id"] == "sub":
            sample["scores"]["includes"]["value"] = "P"

    log = _rescored(tmp_path, partial)
    refused, _ = _compare(tmp_path, LOGS / "baseline.eval", log)
    assert refused.returncode == 1
    assert (
        f"{log}: sample sub epoch 1: scorer includes: the score 'P' is not pass/fail; pass --pass-threshold T"
        in (refused.stderr)
    )
    lenient, comparison = _compare(tmp_path, LOGS / "baseline.eval", log, "--pass-threshold", "0.5")
    assert lenient.returncode == 0, lenient.stderr
    assert _tasks(comparison)["sub"][3:] == (5, 5)
    strict, comparison = _compare(tmp_path, LOGS / "baseline.eval", log, "--pass-threshold", "1")
    assert strict.returncode == 0, strict.stderr
    assert _tasks(comparison)["sub"][3:] == (0, 5)
    bad = alisio(tmp_path, "eval", "compare", LOGS / "baseline.eval", log, "--pass-threshold", "high")
    assert bad.returncode == 1 and "--pass-threshold high: not a number" in bad.stderr


def test_several_scorers_need_one_named_and_an_errored_sample_is_not_judged(tmp_path: Path) -> None:
    def second_scorer(sample: dict[str, Any]) -> None:
        sample["scores"]["exact"] = {"value": "I"}

    def and_an_error(sample: dict[str, Any]) -> None:
        second_scorer(sample)
        if sample["id"] == "add" and sample["epoch"] == 1:
            sample["error"] = {"message": "RuntimeError: the sandbox died\nTraceback ...", "traceback": ""}

    before = _rescored(tmp_path, second_scorer, "before")
    after = _rescored(tmp_path, and_an_error, "after")
    refused, _ = _compare(tmp_path, before, after)
    assert refused.returncode == 1
    assert f"{before}: sample add epoch 1: 2 scorers (exact, includes); pass --scorer NAME" in refused.stderr
    chosen, comparison = _compare(tmp_path, before, after, "--scorer", "includes")
    assert chosen.returncode == 0, chosen.stderr
    tasks = _tasks(comparison)
    assert tasks["mul"] == ("inconclusive", 5, 5, 5, 5)
    assert tasks["add"] == ("not_comparable", 5, 5, 4, 4)  # the errored sample is not judged
    exact, comparison = _compare(tmp_path, before, before, "--scorer", "exact")
    assert exact.returncode == 0, exact.stderr
    assert _tasks(comparison)["mul"][1:] == (0, 5, 0, 5)


def _harbor_job(root: Path, name: str, rewards: dict[str, list[object]], agent: str = "claude-code") -> Path:
    """A Harbor job directory as Harbor writes it: config.json and one directory per trial with result.json."""
    job = root / name
    job.mkdir(parents=True)
    config = {"job_name": name, "agents": [{"name": agent, "model_name": "anthropic/claude-x"}],
              "datasets": [{"name": "terminal-bench", "version": "2.0"}]}  # fmt: skip
    (job / "config.json").write_text(json.dumps(config))
    for task, values in rewards.items():
        for index, value in enumerate(values):
            trial = job / f"{task}__{name}{index}"
            trial.mkdir()
            result: dict[str, Any] = {
                "id": f"00000000-0000-0000-0000-00000000000{index}",
                "task_name": task,
                "trial_name": trial.name,
                "trial_uri": f"file://{trial}",
                "task_id": {"path": f"tasks/{task}"},
                "task_checksum": f"sha-{task}",
                "config": {"task": {"path": f"tasks/{task}"}},
                "agent_info": {"name": agent, "version": "2.1.0", "model_info": {"name": "claude-x", "provider": "anthropic"}},
                "agent_result": {"n_input_tokens": 1000, "n_output_tokens": 100, "n_cache_tokens": 400},
                "started_at": f"2026-11-30T10:00:0{index}Z",
                "finished_at": f"2026-11-30T10:05:0{index}Z",
            }  # fmt: skip
            if value is None:
                result["exception_info"] = {"exception_type": "AgentTimeoutError", "exception_message": "timed out",
                                            "exception_traceback": "", "occurred_at": "2026-11-30T10:05:00Z"}  # fmt: skip
            else:
                result["verifier_result"] = {"rewards": {"reward": value}}
            (trial / "result.json").write_text(json.dumps(result))
    return job


def test_two_harbor_jobs_compare_with_verdicts(tmp_path: Path) -> None:
    before = _harbor_job(tmp_path, "before", {"fix-git": [0.0] * 6, "hello-world": [1.0] * 5 + [None]})
    after = _harbor_job(tmp_path, "after", {"fix-git": [1.0] * 6, "hello-world": [1, 1, 1, 1, 1, 1]})
    result, comparison = _compare(tmp_path, before, after)
    assert result.returncode == 0, result.stderr
    assert _tasks(comparison) == {
        "fix-git": ("improved", 0, 6, 6, 6),
        "hello-world": ("not_comparable", 5, 5, 6, 6),  # an errored trial on a side: not comparable
    }
    conditions = comparison["baseline"]
    assert conditions["agent"] == {"name": "claude-code", "kind": "harbor", "version": "2.1.0"}
    assert (conditions["suiteId"], conditions["suiteVersion"], conditions["model"]) == (
        "terminal-bench",
        "2.0",
        "claude-x",
    )


def test_a_harbor_reward_between_0_and_1_needs_a_threshold(tmp_path: Path) -> None:
    before = _harbor_job(tmp_path, "before", {"t": [0.0] * 5})
    after = _harbor_job(tmp_path, "after", {"t": [0.75] * 5})
    refused, _ = _compare(tmp_path, before, after)
    assert refused.returncode == 1
    assert (
        f"{after}: trial t__after0: reward reward: the score 0.75 is not pass/fail; pass --pass-threshold T"
        in (refused.stderr)
    )
    judged, comparison = _compare(tmp_path, before, after, "--pass-threshold", "0.7")
    assert judged.returncode == 0 and _tasks(comparison)["t"] == ("improved", 0, 5, 5, 5)
    trial = after / "t__after0"
    refused = alisio(tmp_path, "eval", "compare", before, trial)
    assert (
        refused.returncode == 1
        and f"{trial}: a Harbor trial directory; give its job directory" in refused.stderr
    )


@pytest.mark.slow
@pytest.mark.skipif(not INSPECT_PYTHON.exists(), reason="Inspect AI is not installed (make agents-inspect)")
def test_logs_written_now_by_the_real_inspect_compare_as_the_committed_ones(tmp_path: Path) -> None:
    """inspect-ai with its mock model writes the logs again (no network); they compare as the committed ones."""
    done = subprocess.run(
        [str(INSPECT_PYTHON), str(LOGS / "make_logs.py"), str(tmp_path / "logs")],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fresh, fresh_cmp = _compare(
        tmp_path, tmp_path / "logs" / "baseline.eval", tmp_path / "logs" / "candidate.eval"
    )
    committed, committed_cmp = _compare(tmp_path, LOGS / "baseline.eval", LOGS / "candidate.eval")
    assert fresh.returncode == committed.returncode == 0, fresh.stderr
    assert _tasks(fresh_cmp) == _tasks(committed_cmp)
    shutil.rmtree(tmp_path / "logs")


def _zstd_eval(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """An ``.eval`` whose members are zstd frames (method 93) of the given bytes, each declaring the given
    size: written stored by zipfile, then its method and sizes set as Inspect's writer sets them."""
    import struct
    import zipfile
    import zlib

    import zstandard

    frames = {name: zstandard.ZstdCompressor(level=19).compress(data) for name, (data, _) in members.items()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, frame in frames.items():
            archive.writestr(name, frame)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
    entry = raw.index(b"PK\x01\x02")  # the central directory: one entry per member, in order
    for info in infos:
        data, declared = members[info.filename]
        crc = zlib.crc32(data[:declared])
        for at, method, crc_at, size_at in ((info.header_offset, 8, 14, 22), (entry, 10, 16, 24)):
            struct.pack_into("<H", raw, at + method, 93)
            struct.pack_into("<L", raw, at + crc_at, crc)
            struct.pack_into("<L", raw, at + size_at, declared)
        name, extra, comment = struct.unpack_from("<3H", raw, entry + 28)
        entry += 46 + name + extra + comment
    path.write_bytes(bytes(raw))
    return path


def test_a_zstd_member_that_decompresses_past_its_declared_size_is_refused_without_reading_it(
    tmp_path: Path,
) -> None:
    """A zip bomb: a member declaring 6 KB whose zstd frame (its header saying so) holds 256 MiB. The log is
    refused in one line, and alisio never holds more than a few MiB of it (the frame's size is not believed)."""
    import tracemalloc

    log = json.loads((LOGS / "candidate.json").read_text())
    sample = json.dumps(log.pop("samples")[0]).encode()
    header = json.dumps(log).encode()
    bomb = sample + b" " * (256 << 20)
    path = _zstd_eval(
        tmp_path / "bomb.eval",
        {"header.json": (header, len(header)), "samples/add_epoch_1.json": (bomb, len(sample))},
    )
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        refused = alisio(tmp_path, "eval", "stability", path, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.strip().endswith(
        f"{path}: samples/add_epoch_1.json: holds more than the {len(sample):,} bytes it declares; not read"
    )
    assert peak < 64 << 20, f"{peak >> 20} MiB held"
    honest = _zstd_eval(
        tmp_path / "honest.eval",
        {"header.json": (header, len(header)), "samples/add_epoch_1.json": (sample, len(sample))},
    )
    read = alisio(tmp_path, "eval", "stability", honest, honest, "--json")
    assert read.returncode == 0, read.stderr


@pytest.mark.parametrize("damage", ["signature", "offset past the end"])
def test_a_zstd_member_whose_local_header_is_damaged_is_one_line(tmp_path: Path, damage: str) -> None:
    import struct
    import zipfile

    log = json.loads((LOGS / "candidate.json").read_text())
    sample = json.dumps(log.pop("samples")[0]).encode()
    header = json.dumps(log).encode()
    path = _zstd_eval(
        tmp_path / "damaged.eval",
        {"samples/add_epoch_1.json": (sample, len(sample)), "header.json": (header, len(header))},
    )
    raw = bytearray(path.read_bytes())
    if damage == "signature":
        offset = zipfile.ZipFile(path).getinfo("samples/add_epoch_1.json").header_offset
        raw[offset : offset + 4] = b"XXXX"
    else:  # the central directory's first entry (the sample) points past the end of the file
        struct.pack_into("<L", raw, raw.index(b"PK\x01\x02") + 42, 10**8)
    path.write_bytes(bytes(raw))
    refused = alisio(tmp_path, "eval", "stability", path, path)
    assert (refused.returncode, refused.stderr) == (
        1,
        f"alisio eval stability: {path}: samples/add_epoch_1.json: its local header is damaged "
        "(not a readable Inspect log)\n",
    )


@pytest.mark.parametrize("name", ["config.json", "result.json"])
def test_a_harbor_file_over_the_size_cap_is_refused_unread(tmp_path: Path, name: str) -> None:
    """A job's config.json (or, in a directory without trials, its own result.json) over 512 MiB (sparse
    here): one line naming it, as an oversized trial result.json already was, not read into memory."""
    if name == "config.json":
        job = _harbor_job(tmp_path, "big", {"t": [1.0] * 2})
    else:
        job = tmp_path / "big"
        job.mkdir()
    big = job / name
    with big.open("wb") as handle:
        handle.truncate(513 << 20)
    refused = alisio(tmp_path, "eval", "stability", job, job)
    assert (refused.returncode, refused.stderr) == (
        1,
        f"alisio eval stability: {big}: larger than 512 MiB; not read\n",
    )
