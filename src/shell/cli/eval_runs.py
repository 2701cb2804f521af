"""``alisio eval runs [--json]``: the stored runs of the data directory, newest first.

One line per report (a variants run: one per variant, ``<runId>/<variant>``): the run id, the suite and its
version, the model, when it was created, the pass rate (passes over judged runs) and the runs that ended
error; a report that cannot be read is listed as unreadable. ``--json`` prints one document. Exit 0.
"""

from __future__ import annotations

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import Json


def runs(json_output: Json = False) -> ExitCode:
    """List the stored runs, newest first: id, suite, model, when, pass rate."""
    import msgspec

    from alisio.shell.config_home import data_dir
    from alisio.shell.lab.stored import stored_runs

    root = data_dir(common.environment())
    found = stored_runs(root)
    rows = []
    for run in found:
        report = run.report
        if report is None:
            rows.append({"runId": run.run_id, "directory": str(run.directory), "readable": False})
            continue
        c, s = report.conditions, report.summary
        rows.append(
            {
                "runId": run.run_id,
                "directory": str(run.directory),
                "readable": True,
                "suiteId": c.suite_id,
                "suiteVersion": c.suite_version,
                "model": c.model,
                "mode": str(c.mode),
                "createdAt": c.created_at,
                "passes": s.passes,
                "judged": s.judged,
                "errored": s.errored,
                "interrupted": report.interrupted,
            }
        )
    if json_output:
        common.out(msgspec.json.encode({"dataDir": str(root / "eval"), "runs": rows}) + b"\n")
        return ExitCode.OK
    if not rows:
        common.say(f"no stored runs in {root / 'eval'} (eval run writes one there unless --out is given)")
        return ExitCode.OK
    for row in rows:
        if not row["readable"]:
            common.out(f"{row['runId']}  (unreadable report)\n")
            continue
        rate = f"{row['passes']}/{row['judged']} pass" if row["judged"] else "no judged run"
        extra = f", {row['errored']} error" if row["errored"] else ""
        extra += ", interrupted" if row["interrupted"] else ""
        common.out(
            f"{row['runId']}  {row['suiteId']} {row['suiteVersion']}  {row['model']} ({row['mode']})  "
            f"{row['createdAt']}  {rate}{extra}\n"
        )
    return ExitCode.OK
