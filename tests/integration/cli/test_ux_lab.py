"""What a user of the lab sees, through the installed ``alisio``: vacuous rules, text written as a tool call,
the closing hints and table, replay's recorded tokens, what served a run, and time to the first event."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from alisio.core.harness.events import ProviderResponded
from alisio.core.lab.runs.transcript import decode_transcript
from tests.integration.helpers import (
    NOOP,
    ROOT,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    task,
    write_script,
)
from tests.integration.sse_server import Reply, SseServer

SEQUENCE = {
    "kind": "tool-sequence",
    "id": "seq",
    "rules": [
        {"type": "before", "first": "read_file", "then": "edit_file"},
        {"type": "max-calls", "tool": "bash", "max": 2},
    ],
}


def _task(**overrides: Any) -> dict[str, Any]:
    return task("fix-add", verifiers=[SEQUENCE], **overrides)


def test_rules_held_over_no_call_say_vacuous(home: Path) -> None:
    """A rule whose tool was never called passes, its detail and the verifier list saying "vacuous"."""
    suite = make_suite(home, _task())
    out = home / "out"
    result = eval_run(
        home, suite, "-k", "1", "--allow-write", "--out", str(out), script=write_script(home / "s.json", NOOP)
    )
    assert result.returncode == 0, result.stderr
    (verifier,) = read_runs(out)[0].verifiers
    assert verifier.status == "pass" and verifier.vacuous_rules == 2
    assert verifier.detail == (
        "2 rule(s) hold over 0 tool call(s); vacuous (held over 0 calls): before(read_file, edit_file), "
        "max-calls(bash, 2)"
    )
    shown = alisio(home, "eval", "show", str(out))
    assert "pass  seq (tool-sequence, 2 rule(s) vacuous)" in shown.stdout, shown.stdout
    html = (out / "report.html").read_text()
    assert "tool-sequence, 2 rule(s) vacuous" in html


CALL = '{"name": "edit_file", "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}}'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (CALL, "as bare JSON"),
        (f"I will fix it.\n```json\n{CALL}\n```", "in a fenced block"),
        (f"<tool_call>\n{CALL}\n</tool_call>", "in <tool_call> tags"),
    ],
)
def test_a_tool_call_written_as_text_is_an_incident(home: Path, text: str, where: str) -> None:
    """A final text that parses as a call of an offered tool: a text_tool_call incident, named on the fail
    line and counted in report.md's incidents column."""
    suite = make_suite(home)
    out = home / "out"
    script = write_script(home / "s.json", {"turns": [{"text": text}]})
    result = eval_run(home, suite, "-k", "1", "-j", "1", "--allow-write", "--out", str(out), script=script)
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    (incident,) = [i for i in record.incidents if i.kind == "text_tool_call"]
    assert incident.message.startswith(
        f"the final text is a call of edit_file written {where}, not a tool call"
    )
    line = next(line for line in result.stderr.splitlines() if line.startswith("[1/1]"))
    assert "fail (1 turn" in line and ": text_tool_call (a tool call written as text); check: " in line
    assert "text_tool_call 1" in (out / "report.md").read_text()


def test_prose_naming_a_tool_is_no_incident(home: Path) -> None:
    """Text that mentions a tool, or JSON naming a tool not offered, raises no text_tool_call."""
    suite = make_suite(home)
    out = home / "out"
    text = 'I would call edit_file here. {"name": "deploy", "arguments": {}}'
    script = write_script(home / "s.json", {"turns": [{"text": text}]})
    result = eval_run(home, suite, "-k", "1", "--allow-write", "--out", str(out), script=script)
    assert result.returncode == 0, result.stderr
    assert not [i for i in read_runs(out)[0].incidents if i.kind == "text_tool_call"]


def test_runs_cut_mid_stream_at_several_jobs_suggest_one_job(home: Path) -> None:
    """Several provider_stream errors with jobs > 1: the closing lines name the cause and --jobs 1."""
    suite = make_suite(home)
    script = write_script(home / "s.json", {"turns": [{"text": "par", "error": "request cancelled"}]})
    result = eval_run(
        home, suite, "-k", "3", "-j", "2", "--allow-write", "--out", str(home / "o"), script=script
    )
    assert result.returncode == 1, result.stderr
    hint = result.stderr.splitlines()[-1]
    assert hint.startswith("3 runs ended provider_stream (the server cut their streams)"), hint
    assert "with 2 runs at once" in hint and "cancels concurrent requests" in hint
    assert "--jobs 1" in hint and "provider.maxConcurrency" in hint
    alone = eval_run(
        home, suite, "-k", "3", "-j", "1", "--allow-write", "--out", str(home / "p"), script=script
    )
    assert "--jobs 1" not in alone.stderr


def _answer(text: str, model: str, system: str | None, pause_s: float = 0.0) -> Reply:
    """A streamed text answer whose chunks name ``model`` and ``system_fingerprint``, as OpenAI's do."""
    served: dict[str, object] = {"model": model}
    if system is not None:
        served["system_fingerprint"] = system
    return Reply.sse(
        {**served, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**served, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**served, "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}},
        pause_s=pause_s,
    )


def _live(home: Path, suite: Path, server: SseServer, out: Path, *args: str) -> None:
    result = eval_run(home, suite, "-k", "2", "-j", "1", "--allow-write", "--base-url", server.base_url,
                      "--model", "alias", "--out", str(out), *args)  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_what_served_a_run_and_its_time_to_first_event_are_kept(home: Path) -> None:
    """The response's model and system_fingerprint reach the event log, the record and the conditions; the
    time to the first event of each call is logged and its median is in the measured block."""
    suite = make_suite(home)
    out = home / "out"
    with SseServer() as server:
        server.enqueue(_answer("No.", "m-2025-01", "fp_a", pause_s=0.3), _answer("No.", "m-2025-01", "fp_a"))
        _live(home, suite, server, out)
    first = decode_transcript((out / "runs" / "fix-add" / "0.jsonl").read_bytes())
    (response,) = [e for e in first if isinstance(e, ProviderResponded)]
    assert (response.served_model, response.system_fingerprint) == ("m-2025-01", "fp_a")
    assert response.first_event_ms is not None and response.first_event_ms >= 300
    records = {r.repetition: r for r in read_runs(out)}
    assert records[0].measured.served_models == ("m-2025-01",) and records[
        0
    ].measured.system_fingerprints == ("fp_a",)
    report = read_report(out)
    assert (report.conditions.served_models, report.conditions.system_fingerprints) == (
        ("m-2025-01",),
        ("fp_a",),
    )
    times = sorted(r.measured.first_event_ms[0] for r in records.values())
    assert report.summary.measured.first_event_ms_median == sum(times) / 2
    text = (out / "report.md").read_text()
    assert "| Served by | m-2025-01 (system_fingerprint fp_a) |" in text
    assert "first event median" in text


def test_compare_warns_when_another_backend_answered(home: Path) -> None:
    """Same model name, another system_fingerprint: compare warns that another backend answered."""
    suite = make_suite(home)
    with SseServer() as server:
        server.enqueue(
            *[_answer("No.", "m", "fp_a") for _ in range(2)], *[_answer("No.", "m", "fp_b") for _ in range(2)]
        )
        _live(home, suite, server, home / "a")
        _live(home, suite, server, home / "b")
    result = alisio(home, "eval", "compare", str(home / "a"), str(home / "b"), "--format", "md")
    assert result.returncode == 0, result.stderr
    assert "system_fingerprint differs: fp_a -> fp_b (another backend answered)" in result.stdout


def test_record_refuses_a_cassette_of_an_errored_run_and_says_how_many_run_at_once(home: Path) -> None:
    """A task whose recorded run ended error gets no cassette, in one line; the others are written."""
    suite = make_suite(home, task("fix-add"), task("other"))
    script = write_script(home / "s.json", {"turns": [{"text": "par", "error": "upstream reset"}]})
    result = alisio(home, "eval", "record", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                    "--tasks", "fix-add", "--script", str(script), "-j", "1")  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert re.search(
        r"recording calc-suite 1\.0\.0: 1 task \(scripted, scripted, agent alisio \S+, script [0-9a-f]{16}, 1 at once\)",
        result.stderr,
    )
    refused = [line for line in result.stderr.splitlines() if "no cassette written" in line]
    assert refused == [
        "task fix-add: no cassette written: the run ended error (provider_stream): the provider's stream "
        "failed: upstream reset; a replay would only repeat it: record the task again"
    ]
    assert not (suite / "cassettes" / "fix-add.jsonl").exists()


def test_a_replay_labels_its_tokens_recorded(home: Path) -> None:
    """A replay's report calls the cassette's tokens "recorded", not a measurement of this run."""
    from tests.integration.helpers import FIX

    suite = make_suite(home)
    recorded = alisio(home, "eval", "record", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                      "--script", str(write_script(home / "s.json", FIX)))  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    out = home / "replay"
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--mode", "replay",
                    "--allow-write", "-k", "2", "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = (out / "report.md").read_text()
    measured = text[text.index("## Measured") : text.index("## Estimated")]
    assert "| tokens (recorded) | tokens/success (recorded) |" in measured
    assert "A replay spends no tokens: the token figures are the cassette's, as recorded" in measured
    assert "tokens (recorded)" in result.stdout


def test_the_closing_table_has_tokens_wall_median_and_cost(home: Path) -> None:
    """Per task: main-loop tokens, the median wall time and, priced with the rates, the estimated cost; then
    the line naming the rates."""
    from tests.integration.helpers import FIX

    suite = make_suite(home)
    script = write_script(home / "s.json", FIX)
    result = eval_run(home, suite, "-k", "2", "--allow-write", "--input-rate", "3", "--output-rate", "15",
                      "--out", str(home / "o"), script=script)  # fmt: skip
    assert result.returncode == 0, result.stderr
    *table, rates = result.stdout.splitlines()
    header, row = (re.split(r"  +", line) for line in table)
    assert header[6:] == ["tokens", "wall median", "cost (USD)"]
    assert row[6] == "754" and re.fullmatch(r"\d+\.\d s", row[7]) and row[8] == "0.0029"
    assert rates == (
        "cost at USD per million tokens: input 3, cached input 3 (input's: not given), cache writes 3 (input's: "
        "not given), output 15, reasoning 15 (output's: not given); from --input-rate/--output-rate"
    )
    unpriced = eval_run(home, suite, "-k", "1", "--allow-write", "--out", str(home / "p"), script=script)
    assert "cost" not in unpriced.stdout


def _on_a_terminal(home: Path, *args: str, env_extra: dict[str, str] | None = None) -> tuple[int, str]:
    """Run the installed command with stdout (and stderr) on a pseudo-terminal; its exit code and output."""
    import os
    import pty
    import subprocess

    from tests.integration.helpers import ALISIO

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env |= {
        "ALISIO_CONFIG_HOME": str(home / "config"),
        "ALISIO_DATA_HOME": str(home / "data"),
        "COLUMNS": "200",
    }
    env.pop("NO_COLOR", None)
    env |= env_extra or {}
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(ALISIO), *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(timeout=60), b"".join(chunks).decode().replace("\r\n", "\n")


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "reports"


def test_compare_on_a_terminal_prints_a_summary_and_writes_the_markdown(home: Path) -> None:
    """On a terminal: a verdict per task, the counts, the gate, and where comparison.md went (written)."""
    code, text = _on_a_terminal(home, "eval", "compare", str(EXAMPLES / "baseline"), str(EXAMPLES / "candidate"),
                                "--fail-on", "regressed")  # fmt: skip
    assert code == 4, text
    assert re.search(r"^edit-respects-hash +regressed +10/10 100\.0% +3/10 30\.0% +-70\.0 pp$", text, re.M), (
        text
    )
    assert re.search(
        r"^flaky-network +not comparable +7/10 70\.0% +6/8 75\.0%, 2 error +\+5\.0 pp$", text, re.M
    )
    assert "Outcomes: 1 improved, 1 regressed, 4 inconclusive, 1 not comparable." in text
    assert (
        "--fail-on regressed: hit by 1 of 6 tasks with a verdict (edit-respects-hash regressed): exit 4"
        in text
    )
    assert text.count("hit by 1 of 6") == 1  # once, in the summary, not again on stderr
    (written,) = (home / "data" / "comparisons").iterdir()
    assert f"Full comparison (Markdown): {written};" in text
    assert written.read_text().startswith("# Comparison: synthetic-example 1.0.0")
    assert len(text.splitlines()) < 25 and "## Per-task tests" not in text


def test_compare_format_md_prints_the_full_markdown_on_a_terminal(home: Path) -> None:
    """--format md: today's full Markdown on a terminal too; a bad --format is one line, exit 1."""
    code, text = _on_a_terminal(home, "eval", "compare", str(EXAMPLES / "baseline"), str(EXAMPLES / "candidate"),
                                "--format", "md")  # fmt: skip
    assert (
        code == 0 and text.startswith("# Comparison: synthetic-example 1.0.0") and "## Per-task tests" in text
    )
    bad = alisio(
        home, "eval", "compare", str(EXAMPLES / "baseline"), str(EXAMPLES / "candidate"), "--format", "x"
    )
    assert (bad.returncode, bad.stderr) == (
        1,
        "alisio eval compare: --format: expected summary or md, got 'x'\n",
    )


def _rate_limited_then(answer: Reply) -> tuple[Reply, ...]:
    limited = Reply.json({"error": {"message": "slow down"}}, status=429, headers=(("Retry-After", "1"),))
    return limited, answer


def test_the_live_status_shows_the_wait_the_retries_and_the_tokens(home: Path) -> None:
    """A 429 with Retry-After: the status line says rate-limited, retrying in 1 s, the retries so far, then
    the tokens so far; the finished line's status is coloured."""
    suite = make_suite(home)
    with SseServer() as server:
        server.enqueue(*_rate_limited_then(_answer("No.", "m", None)))
        code, text = _on_a_terminal(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                                    "--allow-write", "--base-url", server.base_url, "--model", "m", "--out",
                                    str(home / "o"))  # fmt: skip
    assert code == 0, text
    assert "rate-limited, retrying in 1 s · 1 retry so far" in text, text
    assert "1 retry so far · 42 tokens" in text, text
    assert "\x1b[31mfail\x1b[0m" in text  # red


def test_no_color_and_the_width_of_a_finished_line(home: Path) -> None:
    """NO_COLOR or --no-color: no colour; on a 60-column terminal the finished line is cut to 60 with an
    ellipsis, while report.md keeps the whole reason."""
    suite = make_suite(home)
    script = str(write_script(home / "s.json", NOOP))
    args = (
        "eval",
        "run",
        "calc-suite",
        "--suite-dir",
        str(suite),
        "--yes",
        "-k",
        "1",
        "--allow-write",
        "--script",
    )
    for env, flag in (({"NO_COLOR": "1"}, ()), ({}, ("--no-color",))):
        out = str(home / f"o{len(flag)}")
        code, text = _on_a_terminal(
            home, *args, script, "--out", out, *flag, env_extra={"COLUMNS": "60", **env}
        )
        assert code == 0, text
        assert "\x1b[31m" not in text and "\x1b[32m" not in text
        (line,) = [
            re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", x) for x in text.splitlines() if "[1/1] fix-add" in x
        ]
        line = line.strip()
        assert len(line) == 60 and line.endswith("…") and line.startswith("[1/1] fix-add rep 0: fail"), line
    assert "check: exit 1" in (home / "o0" / "report.md").read_text()


# --- CLI conventions ---------------------------------------------------------------------------------


def test_short_version_and_the_help_command(home: Path) -> None:
    """-V prints the version; alisio help eval compare is alisio eval compare --help; a wrong one is one line."""
    from importlib.metadata import version

    assert alisio(home, "-V").stdout == f"alisio {version('alisio')}\n"
    assert alisio(home, "help", "eval", "compare").stdout == alisio(home, "eval", "compare", "--help").stdout
    assert alisio(home, "help").stdout == alisio(home, "--help").stdout
    wrong = alisio(home, "help", "eval", "nope")
    assert (wrong.returncode, wrong.stderr) == (
        1,
        "alisio help: no command 'alisio eval nope': see alisio --help\n",
    )


def test_the_help_command_prints_the_manual_shipped_with_alisio(home: Path) -> None:
    """alisio help TOPIC prints a page as the package holds it, TOPIC#ANCHOR one section (up to the next heading
    of its level), topics lists them; an unknown topic or heading is one line naming what exists."""
    lab = alisio(
        home, "help", "lab"
    )  # the editable install reads the checkout's docs (the wheel: test_packaging)
    assert lab.returncode == 0 and lab.stdout == (ROOT / "docs" / "lab.md").read_text(encoding="utf-8")
    section = alisio(home, "help", "lab#reports").stdout
    assert section.startswith("## Reports\n") and section in lab.stdout
    assert "\n## " not in section.removeprefix("## Reports\n") and len(section) < len(lab.stdout) / 5
    listed = alisio(home, "help", "topics").stdout.splitlines()
    assert listed[0] == "alisio help readme" and "alisio help agents" in listed and len(listed) >= 15
    unknown = alisio(home, "help", "labs")
    assert unknown.returncode == 1 and unknown.stderr.startswith(
        "alisio help: no command or topic 'labs': the topics are readme, agents,"
    )
    heading = alisio(home, "help", "lab#nope")
    assert (heading.returncode, heading.stderr) == (
        1,
        "alisio help: topic lab has no heading #nope: alisio help lab shows the whole page\n",
    )


def test_shell_completion_installs_and_completes(home: Path) -> None:
    """--install-completion (from bash) writes a completion script the shell sources; completing "alisio ev" gives
    eval, "alisio eval r" gives run, runs and record."""
    import os
    import subprocess

    from tests.integration.helpers import ALISIO

    env = {**os.environ, "HOME": str(home), "SHELL": "/bin/bash"}
    # From bash, as a user types it: typer detects the shell from the parent process (the trailing command
    # keeps bash from exec-ing alisio in its place).
    typed = f"{ALISIO} --install-completion; status=$?; exit $status"
    installed = subprocess.run(["bash", "-c", typed], capture_output=True, text=True, env=env, timeout=30,
                               check=False)  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    script = home / ".bash_completions" / "alisio.sh"
    assert "_alisio_completion" in script.read_text() and str(script) in (home / ".bashrc").read_text()

    def complete(words: str) -> list[str]:
        cword = str(len(words.split()) - 1)
        env_c = {**env, "_ALISIO_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
        done = subprocess.run(
            [str(ALISIO)], capture_output=True, text=True, env=env_c, timeout=30, check=False
        )
        return done.stdout.split()

    assert complete("alisio ev") == ["eval"]
    assert sorted(complete("alisio eval r")) == ["record", "rejudge", "run", "runs"]


def test_help_is_coloured_on_a_terminal_unless_told_not_to(home: Path) -> None:
    """On a terminal the help has colour; with NO_COLOR or --no-color it has none."""
    code, coloured = _on_a_terminal(home, "--help")
    assert code == 0 and "\x1b[1;33mUsage:" in coloured
    for env, flag in (({"NO_COLOR": "1"}, ()), ({}, ("--no-color",))):
        code, plain = _on_a_terminal(home, *flag, "eval", "run", "--help", env_extra=env)
        assert code == 0 and "Usage:" in plain and "\x1b[1;33m" not in plain and "\x1b[33m" not in plain
