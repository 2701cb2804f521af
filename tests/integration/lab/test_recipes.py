"""The GitHub Actions recipe of docs/distributed.md, as CI would carry it out: its ``run:`` lines are read from
the page, each matrix job's shard command runs as its own process in its own directory (a fresh runner: its
own checkout of the suite, its own data directory), its directory is "uploaded" (copied) to where the merge
job's download-artifact puts it, and the merge job's command runs in yet another directory without the suite.
The provider is a local stand-in model behind the configuration the runners share."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.integration.helpers import ALISIO, ROOT, command_env, read_report, write_config
from tests.integration.seq_model import seq_suite, stand_in

PAGE = ROOT / "docs" / "distributed.md"


def _recipe() -> tuple[list[int], str, str]:
    """The matrix's shard numbers, the shard job's alisio command and the merge job's, as the page has them."""
    text = PAGE.read_text()
    start = text.index("### GitHub Actions")
    block = text[
        text.index("```yaml", start) + len("```yaml") : text.index("```\n", text.index("```yaml", start))
    ]
    matrix = [int(n) for n in re.search(r"shard: \[([\d, ]+)\]", block).group(1).split(",")]  # type: ignore[union-attr]
    commands = [line.split("run: ", 1)[1].strip() for line in block.splitlines() if "run: alisio" in line]
    shard, merge = commands
    assert "download-artifact" in block and "upload-artifact" in block and "pattern: shard-*" in block
    return matrix, shard, merge


def _bash(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = command_env(home, {"PATH": f"{ALISIO.parent}:{command_env(None)['PATH']}"})
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_github_actions_recipe_runs_its_shards_and_merges_them_in_separate_processes(
    tmp_path: Path,
) -> None:
    matrix, shard_command, merge_command = _recipe()
    assert matrix == [1, 2, 3, 4] and "${{ matrix.shard }}/4" in shard_command
    server, model = stand_in({"": {"answers": 1.0, "reads": 0.0}})
    with server:
        config = f'[provider]\nbaseUrl = "{server.base_url}"\nmodel = "stand-in"\n'
        merge_job = tmp_path / "merge-job"
        for shard in matrix:
            runner = tmp_path / f"runner-{shard}"  # a fresh runner: its checkout, its own data and config
            (runner / "suites").mkdir(parents=True)
            built = seq_suite(runner / "suites", "answers", "reads")
            built.rename(runner / "suites" / "my-suite")
            suite_json = runner / "suites" / "my-suite" / "suite.json"
            suite_json.write_text(suite_json.read_text().replace('"calc-suite"', '"my-suite"'))
            write_config(runner, config)
            command = shard_command.replace("${{ matrix.shard }}", str(shard))
            done = _bash(command, runner, runner)
            assert done.returncode == 0, done.stderr
            artifact = runner / f"shard-{shard}"  # upload-artifact path, then download-artifact into shards/
            shutil.copytree(artifact, merge_job / "shards" / f"shard-{shard}")
        merged = _bash(merge_command, merge_job, merge_job)  # the merge job has no checkout and no config
    assert merged.returncode == 0, merged.stderr
    assert sum(model.runs.values()) == 20  # each run ran once, on one runner
    report = read_report(merge_job / "merged")
    assert (report.summary.runs, report.planned_runs, report.interrupted) == (20, 20, False)
    rates = {t.task_id: (t.passes, t.judged) for t in report.tasks}
    assert rates == {"answers": (10, 10), "reads": (0, 10)}
    assert report.origin is not None and [m.index for m in report.origin.shards] == matrix
    assert (merge_job / "junit.xml").read_text().count("<testcase") == 2
    assert "merged 4 shards of plan" in merged.stderr
