"""The Report: per-task metrics and a suite summary of run records, with their conditions.

Its wire format (report.json) is ``alisio.core.lab.reports.report_json``.

``alisio.core.lab.reports.report_build.build_report`` builds it. Rules the report keeps (the spec's "Reading the results" and "Measured and estimated"):

- A number without its conditions is an anecdote: every report carries its ``Conditions``.
- Judged runs are pass, fail and budget_exceeded. Errored runs are counted apart and excluded from every rate
  and every measured figure.
- successRate = passes / judged with its 95% Wilson interval; absent when nothing was judged; no interval in
  replay mode (replay is deterministic: the observed pass/fail is the result). lowPower below 5 judged runs.
- pass@k / pass^k: observed only when exactly k runs were judged (fewer: n/a, more: it would be pass@n), and
  the unbiased estimates whenever judged >= k (else absent).
- Measured (provider tokens, event counts, wall time) and estimated (costUsd) are separate blocks, never
  added. Tokens are omitted, not guessed, when any judged run of the scope did not report usage for every
  turn. Per-success figures are the total spend of the judged runs, failures included, over the successes.
- Cached input: pooled cached / input tokens over the judged runs that reported it for every turn
  (``cachedPartial`` runs are left out); absent, never 0, when no run reported it.
- The suite summary does not pool runs across tasks: its success rate is the mean of per-task rates with a
  task-clustered standard error (runs cluster within tasks).
"""

from __future__ import annotations

from enum import StrEnum

from alisio.core.base import Frozen
from alisio.core.harness.prices import Rates
from alisio.core.lab.reports.context import ContextCondition
from alisio.core.lab.reports.origin import RunOrigin
from alisio.core.lab.reports.profile_block import ReliabilityProfile
from alisio.core.lab.reports.seq_block import SequentialBlock
from alisio.core.lab.reports.trust import RejudgeBlock, SelfCheckBlock
from alisio.core.stats.rates import ClusteredMean, Interval

__all__ = [
    "DEFAULT_AGENT",
    "LOW_POWER_BELOW",
    "MIXED_AGENTS",
    "REPORT_SCHEMA_VERSION",
    "AgentCondition",
    "AnswerSource",
    "CachedInput",
    "CompactionSettings",
    "Conditions",
    "Count",
    "Estimated",
    "MeasuredBlock",
    "Rates",
    "Report",
    "Summary",
    "SummaryMeasured",
    "TaskMeasured",
    "TaskReport",
    "Tokens",
    "finished_runs",
]

REPORT_SCHEMA_VERSION = 1
LOW_POWER_BELOW = 5
"""Fewer judged runs than this prints a low power warning (and compare makes no claim)."""


class AnswerSource(StrEnum):
    """live: the configured provider (harness + model, with variance); replay: a cassette (harness only)."""

    LIVE = "live"
    REPLAY = "replay"


class CompactionSettings(Frozen, frozen=True, kw_only=True):
    """The compaction settings; token figures are only comparable between reports that share them."""

    threshold: float
    max_context_chars: int


DEFAULT_AGENT = "default"
"""The name ``AgentCondition`` gives alisio's built-in agent when no ``--agent`` (nor a task) names one."""
MIXED_AGENTS = "mixed"
"""The kind of ``AgentCondition`` when the tasks of a report name different agents (``name`` lists them)."""


class AgentCondition(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The agent a report's runs used: its name, kind, version and the digest of its settings."""

    name: str
    """``default`` for the built-in agent no ``--agent`` names; an ``[agents.NAME]`` of config.toml; the
    names joined by ``, `` when the tasks name different agents (kind ``mixed``)."""
    kind: str
    """``builtin``, an external agent's kind (``codex``, ``opencode``, ``aider``, ``claude-code``,
    ``command``), or ``mixed``."""
    version: str
    """The agent's version: the first line its version command printed (a preset's ``--version``), or
    ``unknown``; alisio's version for a built-in agent."""
    settings_hash: str | None = None
    """The sha256 of an external agent's ``[agents.NAME]`` settings as parsed (command, api, env...): two
    runs of one CLI with different flags differ here. ``None`` for a built-in agent (its settings are in
    the configuration hash) and in reports written before it was recorded."""


class Conditions(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The measurement conditions every report carries."""

    suite_id: str
    suite_version: str
    suite_hash: str
    """Content hash of the suite's tasks, fixtures and verifiers."""
    harness_version: str
    config_hash: str
    """Hash of the effective measured configuration."""
    provider: str
    model: str
    endpoint: str | None = None
    """The provider's endpoint, ``scheme://host:port/path`` (never a user name or password); ``None`` for
    scripted and replayed runs, and in reports written before it was recorded."""
    served_models: tuple[str, ...] = ()
    """The distinct ``model`` names the responses gave over every run (what answered; an alias resolved),
    sorted; empty when no response named one (scripted runs, reports written before it was recorded)."""
    system_fingerprints: tuple[str, ...] = ()
    """The distinct ``system_fingerprint`` values the responses gave over every run, sorted."""
    mode: AnswerSource
    k: int
    """Repetitions per task."""
    seed: int
    """Seed of the run order (the provider never receives it)."""
    compaction: CompactionSettings
    rates: Rates | None = None
    """The prices the estimated cost is computed at (``alisio.core.harness.prices``); ``None``: none given."""
    rates_from: str | None = None
    """Where ``rates`` came from, for people: ``--input-rate/--output-rate``, or ``config.toml
    [prices."MODEL"]``; ``None`` without rates, and in reports written before it was recorded."""
    run_id: str
    created_at: str
    """ISO 8601 UTC timestamp, passed in by the shell."""
    agent: AgentCondition | None = None
    """The agent of the runs (``--agent``, a variant's, the one agent all tasks name, the built-in default,
    or ``mixed``); ``None`` only in reports written before every report recorded it: the agent is unknown."""
    script_hash: str | None = None
    """``--script``: the sha256 of the script (a directory: of each selected task's script, by task id), so
    two different scripts never compare as one condition; ``None`` for any other run."""
    sandbox: str = "none"
    """Where the agent's commands and the command verifiers ran: ``none`` (as the user) or ``bwrap``. Not
    part of the configuration hash; compare warns when it differs. Reports written before it existed ran
    without one."""
    label: str | None = None
    """``eval run --label TEXT``: the user's name for the run (``eval runs``, the headline, the report);
    ``None`` when none was given."""
    verifiers_hash: str | None = None
    """The sha256 of the tasks' verifiers and protected files (``alisio.core.lab.suites.protected``), the part
    of ``suiteHash`` that judges; ``None`` in reports written before it was recorded."""
    fixtures_hash: str | None = None
    """The sha256 of the fixture files, the other part of ``suiteHash``; ``None`` before it was recorded."""
    faults: str | None = None
    """``--faults``: the injected provider faults, as their canonical spec (``429:0.1,cut:0.05,seed=7``;
    ``alisio.core.harness.faults.spec_text``); ``None``: none were injected."""
    context: ContextCondition | None = None
    """The context every run had (``alisio.core.lab.reports.context``: files, system text, MCP servers added to each
    run, named by a label and a digest); ``None``: no context, or a report written before contexts."""


class Count(Frozen, frozen=True, kw_only=True):
    """A named count (incidents by kind, budget_exceeded and error runs by reason)."""

    name: str
    count: int


class Tokens(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Main-loop provider tokens summed over judged runs (compaction calls excluded)."""

    input: int
    output: int
    total: int
    """input + output (reasoning tokens are part of the output)."""
    reasoning: int | None = None
    """Absent unless every judged run reported reasoning tokens."""


class Estimated(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Estimated cost at the report's rates: uncached input, cache reads, cache writes, reasoning and the rest of
    the output each at its own rate (``alisio.core.harness.prices.cost_usd``), summed over the judged runs."""

    cost_usd: float
    cost_per_success_usd: float | None = None


class MeasuredBlock(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Measured figures summed over judged runs (errored runs excluded); never mixed with estimated cost."""

    turns: int
    tool_calls: int
    compactions: int
    incidents: tuple[Count, ...] = ()
    """Incidents of the judged runs counted by kind, sorted by kind."""
    wall_ms_total: int
    wall_ms_median: float | None = None
    """Median wall time of the judged runs; absent when nothing was judged."""
    wall_ms_variance: float | None = None
    """Sample variance (n - 1); absent with fewer than 2 judged runs."""
    first_event_ms_median: float | None = None
    """Median time to the first event over the provider calls of the judged runs that had a server (queueing
    shows here, apart from the model's time); absent when no call recorded it (scripted, replay)."""
    ms_per_success: float | None = None
    tokens: Tokens | None = None
    """Summed over the judged runs that reported usage for every turn; absent when none did (or nothing was
    judged)."""
    tokens_runs: int | None = None
    """How many judged runs ``tokens`` is over, when some judged runs did not report usage (a call cut at
    maxWallMs, a server without usage); absent when every judged run reported it."""
    tokens_per_success: float | None = None
    """Absent unless every judged run reported its tokens (a partial sum per success would understate it)."""


class TaskMeasured(MeasuredBlock, frozen=True, kw_only=True, omit_defaults=True):
    """Measured figures of one task's judged runs."""


class SummaryMeasured(MeasuredBlock, frozen=True, kw_only=True, omit_defaults=True):
    """Measured totals over every judged run; wall median and variance are over all judged runs pooled."""


class CachedInput(Frozen, frozen=True, kw_only=True):
    """Prompt-cache figures of an arm: present only when at least one judged run reported cached input."""

    tokens: int
    """Cached input tokens summed over the reporting runs."""
    input_tokens: int
    """Input tokens of the same runs."""
    ratio: float | None
    """tokens / input_tokens; absent when the reporting runs had no input tokens."""
    runs_reporting: int
    """Judged runs that reported cached input for every turn (cachedPartial runs are not counted)."""
    runs_judged: int


class TaskReport(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task's counts, rates and measured figures."""

    task_id: str
    runs: int
    judged: int
    """pass + fail + budget_exceeded."""
    passes: int
    fails: int
    budget_exceeded: int
    errored: int
    """Runs that ended error: excluded from every rate, counted apart."""
    budget_reasons: tuple[Count, ...] = ()
    error_reasons: tuple[Count, ...] = ()
    success_rate: float | None = None
    interval: Interval | None = None
    """95% Wilson interval of successRate (live only)."""
    low_power: bool
    pass_at_k: bool | None = None
    """Observed: at least one of the k judged runs passed. Present only when exactly k runs were judged:
    over fewer runs it would claim something about k runs nobody saw, over more it is pass@n (use the
    estimate)."""
    pass_hat_k: bool | None = None
    """Observed: all k judged runs passed; present only when exactly k runs were judged."""
    pass_at_k_estimate: float | None = None
    """Unbiased pass@k (Chen et al. 2021); absent when judged < k."""
    pass_hat_k_estimate: float | None = None
    """Unbiased pass^k (Yao et al. 2024); absent when judged < k."""
    measured: TaskMeasured
    cached_input_ratio: float | None = None
    cached_input_runs: int = 0
    cached_input_tokens: int | None = None
    estimated: Estimated | None = None
    context_used: int | None = None
    """Judged runs that used the report's context (a tool call named one of its files); ``None`` without a
    context."""
    advisory: tuple[str, ...] = ()
    """The task's advisory notes (suite.json ``advisory``): shown, never counted."""


class Summary(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Suite-level figures: totals, and a success rate averaged over tasks (never pooled over runs)."""

    tasks: int
    runs: int
    judged: int
    passes: int
    fails: int
    budget_exceeded: int
    errored: int
    success_rate: ClusteredMean | None = None
    """Mean of the per-task success rates with a task-clustered standard error and a 95% interval (t on
    tasks − 1 degrees of freedom, or pooled Wilson when every task has the same rate); none in replay."""
    low_power_tasks: int
    tasks_pass_at_k: int
    """Tasks with exactly k judged runs where at least one passed (``passAtK`` true)."""
    tasks_pass_hat_k: int
    """Tasks with exactly k judged runs that all passed (``passHatK`` true)."""
    pass_at_k_mean: float | None = None
    """Mean of the per-task pass@k estimates; absent unless every task has one."""
    pass_hat_k_mean: float | None = None
    measured: SummaryMeasured
    cached_input: CachedInput | None = None
    estimated: Estimated | None = None


class Report(Frozen, frozen=True, kw_only=True):
    """report.json: conditions, per-task metrics (sorted by task id) and the summary."""

    schema_version: int = REPORT_SCHEMA_VERSION
    """The report.json format; a reader refuses a higher one (``schema_version_problem``)."""
    conditions: Conditions
    """What was measured and how: without them a number is an anecdote."""
    tasks: tuple[TaskReport, ...]
    """Per-task counts, rates and measured figures, sorted by task id."""
    summary: Summary
    """Suite-level totals and the task-averaged success rate."""
    planned_runs: int | None = None
    """How many runs the command planned (tasks x k); ``None`` in reports written before it was recorded.
    Additive with a default, so schemaVersion stays 1 and older reports still decode."""
    interrupted: bool = False
    """The command stopped before its plan finished (Ctrl-C, a signal, a refused key, an unreachable
    endpoint, a full disk): only the finished runs are reported, tasks that never ran are missing."""
    stopped: str | None = None
    """Why it stopped, one line for people (``Ctrl-C``, ``the provider refused the API key...``)."""
    capped: str | None = None
    """The command-wide cap that stopped it (``--max-cost-usd``, ``--max-total-tokens``): no new run started
    once it was reached, the runs in flight finished; the runs not started are not run, never failures."""
    retried: int = 0
    """Errored runs run again by ``eval run --resume --retry-errors``: their earlier records are kept apart in
    retried/runs.jsonl and counted nowhere else."""
    sequential: SequentialBlock | None = None
    """A sequential command's design and each task's stop (``alisio.core.lab.reports.seq_block``); ``None`` for a
    fixed-k run. ``plannedRuns`` is then tasks x maxK, the most it could run."""
    self_check: SelfCheckBlock | None = None
    """The suite's self-check over the report's tasks (``alisio.core.lab.reports.trust``); ``None`` in reports written
    before it was recorded."""
    rejudge: RejudgeBlock | None = None
    """Set in a report made by ``eval rejudge``: what was judged again, the hashes before and after, and the
    verdicts that changed."""
    origin: RunOrigin | None = None
    """Where the runs came from when not all from this command: one shard of a plan (``plannedRuns`` is then
    the shard's), a merge of shards, runs reused from a stored run (``alisio.core.lab.reports.origin``)."""
    reliability: ReliabilityProfile | None = None
    """The reliability profile (``alisio.core.lab.reports.profile_block``): k >= 2, not replay; ``None`` otherwise and
    in reports written before it was kept."""


def finished_runs(report: Report) -> str:
    """The runs the report holds, against the plan when known: ``7 of 35 planned runs``, ``7 runs``."""
    done = sum(task.runs for task in report.tasks)
    if report.planned_runs is not None:
        return f"{done} of {report.planned_runs} planned runs"
    return f"{done} run" if done == 1 else f"{done} runs"
