"""Issue 16's prices and cost caps, through the CLI against the local scripted server.

- ``[prices."MODEL"]`` in config.toml prices cached input, cache writes and reasoning at their own rates; the
  flags win; the estimated block names every rate and where it came from; bad tables are one-line errors;
- ``--max-total-tokens`` / ``--max-cost-usd``: no new run starts once reached, the runs in flight finish, the
  report says "stopped by ... after N of M", compare flags it as partial; refused up front where it could not
  be enforced;
- ``budget.maxCostUsd`` per task ends a run ``budget_exceeded``; without prices the task is refused first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alisio.core.lab.runs.records import RunStatus
from tests.integration.helpers import alisio, eval_run, make_suite, read_report, read_runs, run_dirs, task
from tests.integration.sse_server import Reply, SseServer

MODEL = "org/m-1.5"
PRICES = f'[prices."{MODEL}"]\ninput = 2\ncachedInput = 0.5\noutput = 10\nreasoning = 20\n'


def answer(prompt: int = 1000, cached: int = 400, completion: int = 100, reasoning: int = 30) -> Reply:
    """One final answer with its usage (cached and reasoning tokens in Chat Completions' detail fields)."""
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    return Reply.sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
    )


def suite(home: Path, *ids: str, **budget: object) -> Path:
    """A suite of tasks that need no grant (each run fails its check: a judged run, never an error)."""
    limits = {"maxTurns": 10, "maxWallMs": 60000, **budget}
    tasks = [task(i, policy={"mode": "ask"}, budget=limits) for i in ids or ("t",)]
    return make_suite(home, *tasks)


def configure(home: Path, server: SseServer, extra: str = "") -> None:
    (home / "config").mkdir(exist_ok=True)
    text = f'[provider]\nbaseUrl = "{server.base_url}"\nmodel = "{MODEL}"\n{extra}'
    (home / "config" / "config.toml").write_text(text)


# a run of answer(): (600 x 2 + 400 x 0.5 + 70 x 10 + 30 x 20) / 1e6 USD
RUN_COST = 0.0027


def test_a_price_table_prices_each_kind_of_token_at_its_own_rate(home: Path) -> None:
    with SseServer(answer(), answer()) as server:
        configure(home, server, PRICES)
        result = eval_run(home, suite(home), "-k", "2", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    report = read_report(run_dirs(home)[0])
    assert report.summary.estimated is not None
    assert report.summary.estimated.cost_usd == pytest.approx(2 * RUN_COST)
    assert report.conditions.rates_from is not None
    assert report.conditions.rates_from.endswith(f'config.toml [prices."{MODEL}"]')
    md = (run_dirs(home)[0] / "report.md").read_text()
    rates = "input 2, cached input 0.5, cache writes 2 (input's: not given), output 10, reasoning 20"
    assert rates in md
    html = (run_dirs(home)[0] / "report.html").read_text()
    assert "cache writes 2 (input&#x27;s: not given)" in html or "cache writes 2 (input's: not given)" in html
    data = json.loads((run_dirs(home)[0] / "report.json").read_text())
    assert data["conditions"]["rates"] == {"inputRate": 2.0, "outputRate": 10.0, "cachedInputRate": 0.5,
                                           "reasoningRate": 20.0}  # fmt: skip
    table = result.stdout.splitlines()
    assert table[1].split()[-1] == "0.0054"  # the closing table's cost column (USD)
    assert table[-1] == f"cost at USD per million tokens: {rates}; from {report.conditions.rates_from}"


def test_the_rate_flags_win_over_the_table_and_the_report_says_so(home: Path) -> None:
    with SseServer(answer()) as server:
        configure(home, server, PRICES)
        result = eval_run(home, suite(home), "-k", "1", "--input-rate", "1", "--output-rate", "3")
    assert result.returncode == 0, result.stderr
    report = read_report(run_dirs(home)[0])
    assert report.conditions.rates_from == "--input-rate/--output-rate"
    assert report.summary.estimated is not None
    # no cached or reasoning price given: they are priced as input and output
    assert report.summary.estimated.cost_usd == pytest.approx((1000 * 1 + 100 * 3) / 1e6)
    md = (run_dirs(home)[0] / "report.md").read_text()
    assert "cached input 1 (input's: not given)" in md and "from --input-rate/--output-rate" in md


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("input = 1\noutptu = 2\n", 'prices."org/m-1.5".outptu: unknown key (did you mean output?)'),
        ("input = -1\noutput = 2\n", 'prices."org/m-1.5".input: a price is USD per million tokens, 0 to'),
        ("input = nan\noutput = 2\n", 'prices."org/m-1.5".input: a price is USD per million tokens, 0 to'),
        ("input = 1\n", 'prices."org/m-1.5".output: missing (input and output are required)'),
    ],
)
def test_a_bad_price_table_is_one_line_naming_the_file_and_key(home: Path, table: str, message: str) -> None:
    (home / "config" / "config.toml").write_text(f'[prices."{MODEL}"]\n{table}')
    result = eval_run(home, suite(home), "-k", "1", "--script", str(home / "none.json"))
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert str(home / "config" / "config.toml") in line and message in line, line


# --- command-wide caps ------------------------------------------------------------------------------------


def test_max_total_tokens_starts_no_new_run_once_reached(home: Path) -> None:
    """Each run reports 1,100 tokens; a cap of 1,500 is reached by the second: the third never starts, and
    the report says so and lists it as not run, not as a failure."""
    with SseServer(answer(), answer(), answer()) as server:
        configure(home, server)
        junit = home / "junit.xml"
        flags = ("-k", "3", "--jobs", "1", "--max-total-tokens", "1500", "--junit", str(junit))
        result = eval_run(home, suite(home), *flags)
        assert len(server.requests) == 2
    assert result.returncode == 1
    assert (
        "stopped by --max-total-tokens after 2 of 3 runs (--max-total-tokens 1500 reached: 2,200 tokens)"
        in (result.stderr)
    )
    directory = run_dirs(home)[0]
    report = read_report(directory)
    assert report.capped == "--max-total-tokens" and report.interrupted
    assert [t.runs for t in report.tasks] == [2] and report.summary.fails == 2
    md = (directory / "report.md").read_text()
    assert "Stopped by --max-total-tokens after 2 of 3 planned runs" in md
    assert "not run" in md
    html = (directory / "report.html").read_text()
    assert "Stopped by --max-total-tokens after 2 of 3 planned runs" in html
    listed = alisio(home, "eval", "runs")
    assert "0/2 pass, stopped by --max-total-tokens" in listed.stdout, listed.stdout
    assert (
        json.loads(alisio(home, "eval", "runs", "--json").stdout)["runs"][0]["capped"] == "--max-total-tokens"
    )
    xml = junit.read_text()  # the runs not started are skipped in CI's eyes, never failed or errored
    assert '<testcase name="(stopped by --max-total-tokens)"' in xml and 'errors="0"' in xml
    assert '<skipped message="stopped by --max-total-tokens after 2 of 3 planned runs' in xml


def test_max_cost_usd_lets_the_runs_in_flight_finish(home: Path) -> None:
    """Two runs at once, each slow; the first one to finish passes the cap: the other one, in flight, finishes
    and is kept; the other two never start."""
    slow = [Reply(body=answer().body, pause_s=0.3) for _ in range(4)]
    with SseServer(*slow) as server:
        configure(home, server, PRICES)
        result = eval_run(home, suite(home), "-k", "4", "--jobs", "2", "--max-cost-usd", "0.001")
        assert len(server.requests) == 2
    assert result.returncode == 1
    assert "stopped by --max-cost-usd after 2 of 4 runs" in result.stderr
    report = read_report(run_dirs(home)[0])
    assert report.capped == "--max-cost-usd"
    records = read_runs(run_dirs(home)[0])
    assert len(records) == 2 and all(r.status is RunStatus.FAIL for r in records)
    assert report.summary.estimated is not None
    assert report.summary.estimated.cost_usd == pytest.approx(2 * RUN_COST)


def test_compare_flags_a_capped_report_as_partial(home: Path) -> None:
    with SseServer(answer(), answer(), answer()) as server:
        configure(home, server)
        suite_dir = suite(home)
        eval_run(home, suite_dir, "-k", "2", "--jobs", "1", "--max-total-tokens", "100")
        eval_run(home, suite_dir, "-k", "1", "--jobs", "1")
    capped, full = run_dirs(home)
    result = alisio(home, "eval", "compare", str(capped), str(full))
    assert "the baseline is partial: stopped by --max-total-tokens after 1 of 2 planned runs" in (
        result.stdout + result.stderr
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--max-cost-usd", "1"), f"--max-cost-usd: no rates for the model {MODEL} (give --input-rate"),
        (("--max-cost-usd", "0"), "--max-cost-usd is USD, more than 0, got 0"),
        (("--max-total-tokens", "0"), "--max-total-tokens: 0 is below 1"),
    ],
)
def test_a_cap_that_could_not_be_enforced_is_refused_before_any_run(
    home: Path, flags: tuple[str, str], message: str
) -> None:
    with SseServer() as server:
        configure(home, server)
        result = eval_run(home, suite(home), "-k", "1", *flags)
        assert server.requests == []
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert run_dirs(home) == []


def test_a_cap_is_refused_for_the_scripted_provider(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "x", "usage": {"inputTokens": 1, "outputTokens": 1}}]}))
    result = eval_run(home, suite(home), "-k", "1", "--max-total-tokens", "10", script=script)
    assert result.returncode == 1
    assert "--max-total-tokens: the scripted provider reports no real usage" in result.stderr


def test_a_provider_without_usage_stops_a_capped_command_at_the_first_run(home: Path) -> None:
    bare = Reply.sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    with SseServer(bare, bare) as server:
        configure(home, server)
        result = eval_run(home, suite(home), "-k", "2", "--jobs", "1", "--max-total-tokens", "100000")
        assert len(server.requests) == 1
    assert result.returncode == 1
    assert "a run reported no token usage, so --max-total-tokens cannot be enforced" in result.stderr


# --- budget.maxCostUsd ------------------------------------------------------------------------------------


def read_call(call_id: str) -> Reply:
    """A read_file call with answer()'s usage: the run goes on to the next turn."""
    function = {"name": "read_file", "arguments": json.dumps({"path": "src/calc.py"})}
    delta = {"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": function}]}
    usage = json.loads(answer().body.split(b"data: ")[3].split(b"\n")[0])["usage"]
    return Reply.sse(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": usage},
    )


def test_max_cost_usd_ends_a_run_budget_exceeded_at_the_tables_prices(home: Path) -> None:
    """Each turn costs 0.0027 USD at the table's prices; with maxCostUsd 0.005 the third turn never starts."""
    with SseServer(read_call("c1"), read_call("c2"), read_call("c3")) as server:
        configure(home, server, PRICES)
        result = eval_run(home, suite(home, maxCostUsd=0.005), "-k", "1")
        assert len(server.requests) == 2
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(run_dirs(home)[0])
    assert (record.status, record.reason) == (RunStatus.BUDGET_EXCEEDED, "maxCostUsd")
    transcript = (run_dirs(home)[0] / "runs" / "t" / "0.jsonl").read_text().splitlines()
    stop = next(json.loads(line) for line in transcript if '"budget_stop"' in line)
    assert stop["budget"] == "maxCostUsd" and stop["limit"] == 0.005
    assert stop["value"] == pytest.approx(2 * RUN_COST)


def test_a_task_with_max_cost_usd_and_no_prices_is_refused_before_the_first_run(home: Path) -> None:
    with SseServer() as server:
        configure(home, server)
        result = eval_run(home, suite(home, "cheap", "costly", maxCostUsd=1), "-k", "1")
        assert server.requests == []
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert f"task cheap: budget.maxCostUsd needs prices for the model {MODEL}" in line
    assert f'[prices."{MODEL}"] table in' in line and "nothing was run" in line


def test_alisio_run_max_cost_usd_stops_the_run(home: Path, tmp_path: Path) -> None:
    with SseServer(read_call("c1"), read_call("c2")) as server:
        configure(home, server, PRICES)
        result = alisio(home, "run", "Look at calc.", "--cwd", str(tmp_path), "--max-cost-usd", "0.001")
        assert len(server.requests) == 1
    assert "stopped: budget maxCostUsd exceeded (limit 0.001, reached 0.0027)" in result.stderr


def test_alisio_run_max_cost_usd_without_prices_is_one_line(home: Path, tmp_path: Path) -> None:
    with SseServer() as server:
        configure(home, server)
        result = alisio(home, "run", "Look.", "--cwd", str(tmp_path), "--max-cost-usd", "0.001")
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        f'--max-cost-usd needs prices for the model {MODEL}: a [prices."{MODEL}"] table'
    )


def test_an_external_agents_proxy_refuses_the_call_past_max_cost_usd(tmp_path: Path) -> None:
    """The proxy prices each call's usage (100 input, 10 output tokens) at the table's rates: 0.002 USD a
    call, so with maxCostUsd 0.003 the third call is refused and the run ends budget_exceeded maxCostUsd."""
    from alisio.shell.agents.mock_endpoint import MockEndpoint
    from tests.integration.agents.test_external_agents import _agent, _config, _records, _suite, _task

    _config(tmp_path, _agent("fake-loop", "--model", "loop") + '[prices."m"]\ninput = 10\noutput = 100\n')
    suite_dir = _suite(tmp_path, [_task("costly", "fake-loop")])
    document = json.loads((suite_dir / "suite.json").read_text())
    document["tasks"][0]["budget"]["maxCostUsd"] = 0.003
    (suite_dir / "suite.json").write_text(json.dumps(document))
    out = tmp_path / "out"
    with MockEndpoint() as endpoint:
        done = alisio(
            tmp_path, "eval", "run", "agents-suite", "--suite-dir", str(suite_dir), "--yes", "-k", "1",
            "--base-url", endpoint.base_url, "--allow-write", "--allow-process", "--out", str(out),
            env={"OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
        calls = len(endpoint.model_calls)
    assert done.returncode == 0, done.stderr
    record = _records(out)["costly"]
    assert (record.status.value, record.reason) == ("budget_exceeded", "maxCostUsd")
    assert record.measured.turns == calls == 2


# --- the live status line ---------------------------------------------------------------------------------


def test_the_live_status_line_shows_the_running_tokens_and_cost() -> None:
    """Each response's reported usage adds to the status line's tokens and, at the arm's rates, its cost."""
    from alisio.core.harness.events import ProviderResponded
    from alisio.core.harness.prices import Rates
    from alisio.core.harness.protocol import Usage
    from alisio.core.lab.suites.schedule import RunSpec
    from alisio.shell.cli.live import Progress

    progress = Progress(lambda done, total, record: "", quiet=False, terminal=False)
    rates = Rates(input_rate=2, output_rate=10, cached_input_rate=0.5, reasoning_rate=20)
    progress.planned(4, {None: rates})
    usage = Usage(input_tokens=1000, output_tokens=100, cached_input_tokens=400, reasoning_tokens=30)
    for call in (0, 1):
        event = ProviderResponded(
            seq=call, elapsed_ms=0, call=call, purpose="main", finish_reason="stop", usage=usage,
            text_chars=0, tool_calls=0, duration_ms=1,
        )  # fmt: skip
        progress.on_event(RunSpec(task_id="t", repetition=0, seed=0), event)
    assert progress.status().endswith(" · 2,200 tokens · 0.0054 USD")
    unpriced = Progress(lambda done, total, record: "", quiet=False, terminal=False)
    unpriced.planned(4, {None: None})
    unpriced.on_event(RunSpec(task_id="t", repetition=0, seed=0), event)
    assert unpriced.status().endswith(" · 1,100 tokens")


# --- eval variants, eval record, --resume -----------------------------------------------------------------


def test_a_cap_counts_every_arm_of_eval_variants(home: Path) -> None:
    """Two variants over one slot each: the cap (reached by the first run) leaves the second arm's run not
    started, and each arm's report says it was stopped by the cap."""
    compare = home / "compare.json"
    document = {"suite": "calc-suite", "variants": [{"id": "a"}, {"id": "b", "overrides": {"cache": False}}]}
    compare.write_text(json.dumps(document))
    with SseServer(answer(), answer()) as server:
        configure(home, server)
        result = alisio(
            home, "eval", "variants", "calc-suite", "--suite-dir", str(suite(home)), "--yes", "--variants",
            str(compare), "-k", "1", "--jobs", "1", "--max-total-tokens", "1000", "--out", str(home / "out"),
        )  # fmt: skip
        assert len(server.requests) == 1
    assert result.returncode == 1
    assert "stopped by --max-total-tokens after 1 of 2 runs" in result.stderr
    reports = [read_report(home / "out" / arm) for arm in ("a", "b")]
    assert [r.capped for r in reports] == ["--max-total-tokens", "--max-total-tokens"]
    assert sorted(sum(t.runs for t in r.tasks) for r in reports) == [0, 1]


def test_eval_record_takes_a_cap(home: Path) -> None:
    """A recording is whole or nothing: capped, it writes no cassette, and says so."""
    with SseServer(answer(), answer()) as server:
        configure(home, server)
        result = alisio(
            home, "eval", "record", "calc-suite", "--suite-dir", str(suite(home, "one", "two")), "--yes",
            "--jobs", "1", "--max-total-tokens", "1000",
        )  # fmt: skip
        assert len(server.requests) == 1
    assert result.returncode == 1
    assert "stopped by --max-total-tokens after 1 of 2 runs" in result.stderr
    assert result.stderr.rstrip().endswith("no cassette was written")


def test_a_resumed_run_counts_only_what_it_spends_under_its_own_cap(home: Path) -> None:
    """A cap is the command's: --resume runs the runs not started, under the cap it is given (or none)."""
    suite_dir = suite(home)
    with SseServer(*(answer() for _ in range(4))) as server:
        configure(home, server)
        first = eval_run(home, suite_dir, "-k", "4", "--jobs", "1", "--max-total-tokens", "1500")
        assert "after 2 of 4 runs" in first.stderr
        (directory,) = run_dirs(home)
        again = alisio(
            home, "eval", "run", "--resume", directory.name, "--jobs", "1", "--max-total-tokens", "1000"
        )
        assert "stopped by --max-total-tokens after 3 of 4 runs" in again.stderr, again.stderr  # 2 kept + 1
        assert read_report(directory).capped == "--max-total-tokens"
        last = alisio(home, "eval", "run", "--resume", directory.name, "--jobs", "1")
        assert last.returncode == 0, last.stderr
        assert len(server.requests) == 4
    report = read_report(directory)
    assert (report.summary.runs, report.planned_runs, report.interrupted, report.capped) == (
        4,
        4,
        False,
        None,
    )


def test_anthropic_cache_writes_and_reads_are_priced_at_their_own_rates(home: Path) -> None:
    """Over the Messages api: 100 uncached input, 300 cache reads, 200 cache writes, 10 output tokens."""
    from tests.integration.harness.test_provider_apis import answer as turn
    from tests.property.test_wire import anthropic_stream

    reply = Reply(body=anthropic_stream(turn(text=["Done."], input=100, cache_read=300, cache_write=200)))
    with SseServer(reply) as server:
        table = '[prices."claude-x"]\ninput = 3\ncachedInput = 0.3\ncacheWrite = 3.75\noutput = 15\n'
        (home / "config" / "config.toml").write_text(
            f'[provider]\napi = "anthropic"\nbaseUrl = "{server.base_url}"\nmodel = "claude-x"\n{table}'
        )
        result = eval_run(home, suite(home), "-k", "1")
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(run_dirs(home)[0])
    m = record.measured
    assert (m.input_tokens, m.cached_input_tokens, m.cache_write_input_tokens) == (600, 300, 200)
    estimated = read_report(run_dirs(home)[0]).summary.estimated
    assert estimated is not None
    assert estimated.cost_usd == pytest.approx((100 * 3 + 300 * 0.3 + 200 * 3.75 + 10 * 15) / 1e6)
