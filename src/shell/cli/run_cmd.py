"""``alisio run "<prompt>"``: one headless coding-agent run in a workspace.

Semantics (the spec's global flags, plus the harness's own):
- the ceiling of effects is every effect, since a user is present (``--read-only`` restricts it to read);
  ``--allow-*`` put effects in the policy's ``allow``, so they run without asking;
- ``--policy ask`` (the default) asks ``y/N/always`` on stderr before each other effect when stdin and stderr
  are terminals; without a terminal every ask is denied (an ``approval_denied`` incident). ``auto`` runs
  workspace writes and the effects in ``allow``, and refuses the others without asking; it needs
  ``--allow-write`` (or ``--read-only``), like a suite task in mode auto needs it from the lab, and is refused
  before the run otherwise. ``full`` runs every effect;
- stdout is data: the final assistant text, or with ``--json`` the event log as JSON lines, one per event as
  it happens. Progress (one line per tool call) and messages go to stderr;
- exit 0 when the run completed or stopped at a budget (stderr says which), 1 on a configuration, provider or
  usage error, with one line on stderr (never a traceback, never a key); 130 when interrupted (Ctrl-C), after
  the running command's process group was killed (``--json`` still ends with a ``run_end``, reason
  ``interrupted``);
- ``bash`` commands get the environment without secret-looking variables and without any variable that holds
  the provider key, whatever its name.

Heavy modules (httpx, the agent loop) are imported inside the command so ``alisio --help`` stays fast.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.common import faults_of
from alisio.shell.cli.options import (
    FAULTS_SPEC_HELP,
    Cwd,
    JsonLines,
    PermissionFlags,
    ProviderFlags,
    SandboxChoice,
    SandboxFlag,
    Take,
    grouped,
    option,
)
from alisio.shell.errors import CommandError, expect

if TYPE_CHECKING:
    from collections.abc import Callable

    from alisio.core.harness.budget import RunBudget
    from alisio.core.harness.config import Config, LabSettings
    from alisio.core.harness.events import Effect, Event
    from alisio.core.harness.faults import FaultSpec
    from alisio.core.harness.policy import Policy
    from alisio.core.harness.protocol import ToolCall
    from alisio.shell.harness.agent import AgentSetup, ApprovalAnswer, RunResult
    from alisio.shell.harness.providers.base import Provider
    from alisio.shell.sandbox.bwrap import SandboxRun

DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_WALL_MS = 1_800_000
"""30 minutes."""
RUN = "Run"
BUDGET = "Budget"


class PolicyChoice(StrEnum):
    """``--policy``: the values of ``alisio.core.harness.policy.PolicyMode`` (not imported here, to keep ``--help`` fast)."""

    ASK = "ask"
    AUTO = "auto"
    FULL = "full"


@dataclass(frozen=True)
class RunFlags:
    """Run: where, with which policy and which agent."""

    cwd: Cwd = None
    policy: Annotated[
        PolicyChoice,
        option(
            "--policy",
            help="ask: ask before each effect not allowed (denied without a terminal); auto: read and write "
            "run, other effects only when allowed; full: every allowed effect runs (--read-only still wins).",
            panel=RUN,
            metavar="ask|auto|full",
        ),
    ] = PolicyChoice.ASK
    agent: Annotated[
        str | None, option("--agent", help="A main agent from the configuration.", panel=RUN, metavar="NAME")
    ] = None
    sandbox: SandboxFlag = None


PROVIDER_TAKEN = Take(
    omit=("agent", "mode", "cassette_dir", "context"),  # the agent is --agent of the Run panel; one live run
    help={
        "script": "Play the assistant turns of a JSON file instead of calling a model (testing).",
        "faults": FAULTS_SPEC_HELP + " The end of the run says which calls were faulted.",
    },
    metavar={"script": "FILE"},
)
"""How ``alisio run`` takes the lab's provider group."""


@dataclass(frozen=True)
class BudgetFlags:
    """Budget: when the run stops."""

    max_turns: Annotated[
        int, option("--max-turns", help="Stop after this many turns.", panel=BUDGET, metavar="N")
    ] = DEFAULT_MAX_TURNS
    max_wall_ms: Annotated[
        int,
        option(
            "--max-wall-ms",
            help="Stop after this much wall time (kills a running tool).",
            panel=BUDGET,
            metavar="MS",
        ),
    ] = DEFAULT_MAX_WALL_MS
    max_tokens: Annotated[
        int | None,
        option(
            "--max-tokens",
            help="Stop past this many main-loop tokens (reported usage only).",
            panel=BUDGET,
            metavar="N",
        ),
    ] = None
    max_tool_calls: Annotated[
        int | None,
        option(
            "--max-tool-calls",
            help="Stop before the tool call past this many (default: no limit).",
            panel=BUDGET,
            metavar="N",
        ),
    ] = None
    max_cost_usd: Annotated[
        float | None,
        option(
            "--max-cost-usd",
            help='Stop past this main-loop cost, at the model\'s \\[prices."MODEL"] in config.toml (reported '
            "usage only).",
            panel=BUDGET,
            metavar="USD",
        ),
    ] = None

    def checked(self) -> tuple[int, int, int | None, int | None]:
        """The four counted budgets, each at least 1 (a one-line usage error otherwise)."""
        from alisio.shell.cli.options import check_min

        for flag, value in (
            ("--max-turns", self.max_turns),
            ("--max-wall-ms", self.max_wall_ms),
            ("--max-tokens", self.max_tokens),
            ("--max-tool-calls", self.max_tool_calls),
        ):
            check_min(flag, value, 1)
        return self.max_turns, self.max_wall_ms, self.max_tokens, self.max_tool_calls


def _say(line: str) -> None:
    from alisio.shell.cli.safe_text import shown

    sys.stderr.write(shown(line) + "\n")  # tool output and provider text are untrusted
    sys.stderr.flush()


def _short(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _progress(event: Event) -> None:
    """Human progress on stderr: one line per tool call, plus refusals, compactions and budget stops."""
    from alisio.core.harness.events import BudgetStopped, Compacted, IncidentRaised, ToolCalled, ToolResulted

    match event:
        case ToolCalled(name=name, arguments=arguments):
            _say(f"• {name} {_short(arguments)}")
        case ToolResulted(ok=False, output_excerpt=excerpt):
            _say(f"  ✗ {_short(excerpt)}")
        case Compacted(chars_before=before, chars_after=after):
            _say(f"  (context compacted: {before} -> {after} characters)")
        case IncidentRaised(kind="provider_retry", message=message):
            _say(f"  (provider retry: {_short(message)})")
        case BudgetStopped(budget=budget, limit=limit, value=value):
            _say(f"stopped: budget {budget} exceeded (limit {limit}, reached {value})")
        case _:
            pass


def _json_sink() -> Callable[[Event], None]:
    import msgspec

    encoder = msgspec.json.Encoder()
    out = sys.stdout.buffer

    def write(event: Event) -> None:
        out.write(encoder.encode(event) + b"\n")
        out.flush()

    return write


def _asks(policy: Policy) -> bool:
    """Whether tool calls are put to the user: --policy ask, with stdin and stderr on a terminal."""
    from alisio.core.harness.policy import PolicyMode

    return policy.mode is PolicyMode.ASK and sys.stdin.isatty() and sys.stderr.isatty()


def _terminal_approver() -> Callable[[ToolCall, Effect], ApprovalAnswer]:
    from alisio.core.harness.approval_text import approval_lines

    def approve(call: ToolCall, effect: Effect) -> ApprovalAnswer:
        from alisio.shell.cli.safe_text import shown

        # the arguments as sent (whitespace kept), through the one redaction every output gets
        sys.stderr.write(shown("\n".join(approval_lines(call.name, str(effect), call.arguments))))
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer in ("a", "always"):
            return "always"
        return "yes" if answer in ("y", "yes") else "no"

    return approve


def _workspace(cwd: Path | None) -> Path:
    try:
        workspace = (cwd or Path.cwd()).resolve()
    except OSError as error:  # the current directory was deleted under us
        raise CommandError(f"cannot use the workspace directory: {error.strerror}") from None
    if not workspace.exists():
        raise CommandError(f"--cwd {cwd}: no such directory")
    if not workspace.is_dir():
        raise CommandError(f"--cwd {cwd}: not a directory")
    return workspace


def _policy(choice: PolicyChoice, granted_flags: dict[str, bool], read_only: bool) -> Policy:
    """The run's policy: the ``--allow-*`` flags are its ``allow``, and they are what it may need.

    Raises:
        CommandError: ``--policy auto`` without ``--allow-write`` (nor ``--read-only``): auto edits the workspace
            without asking, so, as for a suite task in mode auto, the write grant must be given explicitly.
    """
    from returns.result import Failure

    from alisio.core.harness.events import Effect
    from alisio.core.harness.policy import GRANT_FLAGS, Policy, PolicyError, PolicyMode, check_task_policy

    allow = frozenset(Effect(name) for name, on in granted_flags.items() if on)
    policy = Policy(mode=PolicyMode(choice.value), allow=allow, read_only=read_only)
    match check_task_policy(policy, allow | {Effect.READ}, allow_suite_full=True):
        case Failure(PolicyError(effect=Effect() as effect)):
            raise CommandError(
                f"--policy {choice.value} carries out the {effect} effect without asking: pass "
                f"{GRANT_FLAGS[effect]} to grant it (or use --policy ask to be asked first, or --read-only)"
            )
        case _:
            return policy


def _run_budget(budget: BudgetFlags, config: Config, model: str) -> RunBudget:
    """The run's budget from the flags; ``--max-cost-usd`` at the model's ``[prices."MODEL"]`` of ``config``.

    Raises:
        CommandError: ``--max-cost-usd`` not a positive number, or no price table for the model.
    """
    import math

    from alisio.core.harness.budget import RunBudget
    from alisio.core.harness.prices import prices_for, table_name

    max_turns, max_wall_ms, max_tokens, max_tool_calls = budget.checked()
    limit = budget.max_cost_usd
    if limit is not None and not (math.isfinite(limit) and limit > 0):
        raise CommandError(f"--max-cost-usd is USD, more than 0, got {limit:g}")
    if limit is not None and prices_for(config.prices, model) is None:
        raise CommandError(
            f"--max-cost-usd needs prices for the model {model}: a [{table_name(model)}] table"
        )
    return RunBudget(
        max_turns=max_turns,
        max_wall_ms=max_wall_ms,
        max_tokens=max_tokens,
        max_tool_calls=max_tool_calls,
        max_cost_usd=limit,
    )


def _provider(
    script: Path | None, model: str | None, base_url: str | None, preset: str | None, *, faulted: bool = False
) -> tuple[Provider, str, Config, str | None]:
    """The provider, the model name, the configuration (config.toml, or every default) and the key.

    ``faulted``: a script is served over in-memory HTTP, so the injected faults reach the provider's transport.
    """
    import os

    from alisio.shell.config_home import load_config

    env = dict(os.environ)
    loaded = expect(load_config(env))
    if script is not None:
        from alisio.shell.harness.providers.base import ProviderFailure
        from alisio.shell.harness.providers.scripted import ScriptedProvider

        try:
            scripted = ScriptedProvider.from_file(script)
        except ProviderFailure as failure:
            raise CommandError(f"--script {failure}") from None
        if faulted:
            from alisio.shell.lab.scripted_http import scripted_http_provider

            timeout_ms = loaded.config.provider.timeout_ms
            http = scripted_http_provider(
                script.read_bytes(), str(script), model or "scripted", "scripted", timeout_ms
            )
            return http, model or "scripted", loaded.config, None
        return scripted, model or "scripted", loaded.config, None
    from alisio.shell.lab.plans import live_plan

    plan = live_plan(loaded, model, base_url, env, preset=preset)  # one run: its gate has one slot
    assert plan.shared is not None  # the live plan's one provider
    return plan.shared, plan.model, loaded.config, plan.key


def _sandbox(
    flag: SandboxChoice | None, lab: LabSettings, workspace: Path, policy: Policy
) -> SandboxRun | None:
    """The run's sandbox (``--sandbox``, else ``[lab] sandbox``), checked before the run; the network only
    when the ``external`` effect runs without asking."""
    import os

    from alisio.core.harness.events import Effect
    from alisio.core.harness.policy import ALL_EFFECTS, Allow, decide
    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.lab.pipeline import sandbox_for
    from alisio.shell.sandbox.bwrap import SandboxRun

    kind = SandboxKind(flag) if flag is not None else None
    _, sandbox = sandbox_for(kind, lab, os.environ, _say)
    if sandbox is None:
        return None
    network = isinstance(decide(Effect.EXTERNAL, policy, ALL_EFFECTS), Allow)
    where = "the host network" if network else "no network"
    _say(f"alisio run: commands run in the bwrap sandbox ({workspace} at /workspace, {where})")
    return SandboxRun(sandbox=sandbox, workspace=str(workspace), network=network)


def _setup(
    prompt: str,
    run: RunFlags,
    provider_flags: ProviderFlags,
    permissions: PermissionFlags,
    budget: BudgetFlags,
    json_out: bool,
) -> tuple[AgentSetup, str | None]:
    """Everything the agent loop needs, checked: workspace, policy, provider, agent, budgets; and the API key
    (only to keep it out of the stored transcript)."""
    import os
    from importlib.metadata import version

    from alisio.core.harness.agent_step import select_agent
    from alisio.core.harness.config import config_hash
    from alisio.core.harness.events import Effect
    from alisio.core.harness.policy import ALL_EFFECTS
    from alisio.core.harness.prices import prices_for
    from alisio.core.harness.sandbox import WORKSPACE
    from alisio.core.replay.fingerprint import path_rules
    from alisio.shell.harness.agent import AgentSetup
    from alisio.shell.harness.tools.dispatch import tool_env

    workspace = _workspace(run.cwd)
    read_only = permissions.read_only
    policy = _policy(run.policy, permissions.granted(), read_only)
    provider, model_name, config, key = _provider(
        provider_flags.script,
        provider_flags.model,
        provider_flags.base_url,
        provider_flags.preset,
        faulted=faults_of(provider_flags.faults) is not None,
    )
    measured, lab = config.measured, config.lab
    sandbox = _sandbox(run.sandbox, lab, workspace, policy)
    expect(select_agent(measured, run.agent), "--agent")
    setup = AgentSetup(
        prompt=prompt,
        workspace=workspace,
        provider=provider,
        model=model_name,
        measured=measured,
        policy=policy,
        granted=frozenset({Effect.READ}) if read_only else ALL_EFFECTS,
        budget=_run_budget(budget, config, model_name),
        rates=prices_for(config.prices, model_name),
        agent=run.agent,
        approver=_terminal_approver() if _asks(policy) else None,
        normalize_rules=path_rules(
            str(workspace), str(run.cwd or ""), *((WORKSPACE,) if sandbox is not None else ())
        ),
        harness_version=version("alisio"),
        config_hash=config_hash(measured),
        on_event=_json_sink() if json_out else _progress,
        env=tool_env(os.environ, key),
        sandbox=sandbox,
        mcp_servers={server.name: server.command for server in config.mcp_servers},
    )
    _check_mcp(setup)
    return setup, key


def _check_mcp(setup: AgentSetup) -> None:
    """config.toml's MCP servers need the process effect: refused with one line before the run (--read-only)."""
    from alisio.core.harness.mcp import mcp_grant_problem

    problem = mcp_grant_problem(setup.mcp_servers, setup.granted)
    if problem is not None:
        raise CommandError(f"config.toml: mcp.servers: {problem}; nothing was run")


def _execute(setup: AgentSetup, faults: FaultSpec | None) -> RunResult:
    """The run, with ``faults`` injected into its provider calls (a line on stderr says which were hit)."""
    from alisio.core.harness.faults import hits_text, spec_text
    from alisio.shell.harness.agent import run_agent
    from alisio.shell.harness.providers.faults import RunWire, run_wire

    wire = RunWire(faults, "run", setup.measured.retries.max)
    try:
        with run_wire(wire):
            return run_agent(setup)
    finally:
        recorded = wire.recorded()
        if recorded is not None:
            shown = (
                f"{len(recorded.hits)} of {recorded.calls} model calls faulted ({hits_text(recorded.hits)})"
            )
            _say(f"alisio run: faults {spec_text(faults)}: {shown}")
        close = getattr(setup.provider, "close", None)
        if callable(close):
            close()


@grouped
def run_command(
    prompt: Annotated[
        str,
        typer.Argument(
            help="The task for the agent; - reads it from standard input.",
            show_default=False,
            metavar="PROMPT",
        ),
    ],
    run: RunFlags,
    provider: Annotated[ProviderFlags, PROVIDER_TAKEN],
    permissions: Annotated[PermissionFlags, Take(omit=("allow_suite_full",))],  # a person present: no suite
    budget: BudgetFlags,
    json_out: JsonLines = False,
) -> ExitCode:
    """Run a headless coding agent on PROMPT in the current directory (or --cwd)."""
    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise CommandError(
            "the prompt is empty (give it as an argument, or - to read it from standard input)"
        )
    faults = faults_of(provider.faults)
    setup, key = _setup(prompt, run, provider, permissions, budget, json_out)
    known = _known(key)
    try:
        result = _execute(setup, faults)
    except KeyboardInterrupt as interrupt:  # the agent closed the event log with run_end first
        from alisio.shell.errors import Terminated

        _say("alisio run: interrupted; a running command and its children were stopped")
        return (
            ExitCode.for_signal(interrupt.signum)
            if isinstance(interrupt, Terminated)
            else ExitCode.INTERRUPTED
        )
    code = _show(result, json_out)
    _keep_record(result, known)
    return code


def _known(key: str | None) -> tuple[tuple[str, str], ...]:
    """The exact credentials to keep out of the stored transcript: the environment's and the API key."""
    import os

    from alisio.shell.lab.cassettes import credentials_of

    return credentials_of(os.environ, key)


def _keep_record(result: RunResult, known: tuple[tuple[str, str], ...]) -> None:
    """Store the transcript (``eval show`` opens it), say where, and end with the usage line (stderr)."""
    import os

    from alisio.core.lab.outputs.run_record import usage_line
    from alisio.shell.lab.run_store import keep_run_record

    try:
        path = keep_run_record(os.environ, result.events, known)
        _say(f"transcript: {path.parent} (alisio eval show opens it)")
    except OSError as error:
        _say(f"warning: the transcript was not kept: {error.strerror or error}")
    _say(usage_line(result.events))  # the last line


def _final_text_out(text: str, terminal: bool) -> str:
    """The model's final text as stdout gets it. On a terminal it is untrusted text reaching the screen, so
    it is made safe as ``eval show`` makes it (``safe_text.shown``: credentials redacted, control sequences
    such as ``ESC]0;title BEL`` or ``ESC[2J`` escaped). To a pipe or a file only the credentials are redacted
    (``safe_text.redacted``) and every other byte is the model's: a script that saves or parses the answer (a
    patch, JSON, a file with tabs or escapes it asked for) needs it unchanged, and escaping would corrupt it."""
    from alisio.shell.cli.safe_text import redacted, shown

    return shown(text) if terminal else redacted(text)


def _show(result: RunResult, json_out: bool) -> ExitCode:
    """The final text on stdout (without --json), a budget stop or an error on stderr; the exit code."""
    match result.outcome:
        case "completed":
            if not json_out:
                text = _final_text_out(result.final_text, sys.stdout.isatty())
                sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
            return ExitCode.OK
        case "budget_exceeded":
            if json_out:
                _say(f"stopped: budget {result.reason} exceeded")
            return ExitCode.OK
    _say(f"alisio run: error ({result.reason}): {result.message}")
    return ExitCode.FAILURE
