"""What makes two plans the same plan, and two runs interchangeable: the plan digest, each arm's key and each
run's fingerprint.

Rules this module keeps:

- An arm's ``ArmKey`` is what its runs measure: the suite's content, the alisio version, the measured
  configuration, the provider, model and endpoint, the mode, the agent (its kind, version and settings), the
  sandbox, the ``--script`` content and the injected faults. Two runs of the same task and repetition under equal keys are
  interchangeable (``--reuse`` takes one for the other). Paths, run ids, times and labels are not part of it:
  the same plan made on two machines has the same key.
- A run's fingerprint is the sha256 of its arm's key, its task and its repetition (16 hex digits): what
  ``eval plan`` writes beside each run and ``--reuse`` matches on. The seed only orders runs, so it is not part
  of it.
- The plan digest is the sha256 of every arm's key, the suite version, the tasks, k, seed, the grants, the
  verdict rule and the ordered runs: shards of one plan carry the same digest, and ``eval run --plan FILE``
  refuses to run a slice of a plan its command would not make.
- ``plan_differences`` names each field two plans differ in, the fields users know first (suite, configuration
  hash, agent, model, endpoint, mode, seed, k, verdict rule), the digest last (a difference no field shows).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import msgspec

from alisio.core.base import Frozen
from alisio.core.lab.plans.manifest import ManifestAgent, RunManifest
from alisio.core.lab.plans.shards import PlannedRun
from alisio.core.lab.suites.schedule import RunSpec

__all__ = [
    "ARM_FIELDS",
    "VERDICT_RULE",
    "ArmKey",
    "arm_keys",
    "key_differences",
    "plan_differences",
    "plan_digest",
    "planned_runs",
    "run_fingerprint",
    "shown",
    "verdict_rule",
]

VERDICT_RULE = "disjoint Wilson intervals; Holm-adjusted p-values"
"""How ``eval variants`` decides each task (``alisio.core.lab.comparisons.compare``'s defaults); a plain run
gives no verdict."""

_ENCODER = msgspec.json.Encoder(order="deterministic")


class ArmKey(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What one arm's runs measure; see the module docstring."""

    suite_id: str
    suite_hash: str
    harness_version: str | None = None
    config_hash: str
    provider: str
    model: str
    endpoint: str | None = None
    mode: str
    agent: str | None = None
    agents: tuple[ManifestAgent, ...] = ()
    """The external agents the arm's runs may use, with their kind, version and settings' digest."""
    sandbox: str = "none"
    script_hash: str | None = None
    context: str | None = None
    """The digest of the context the runs were measured in (plan.json's); ``None``: none."""
    faults: str | None = None
    """The injected provider faults (``--faults``, a variant's ``faults``; their canonical spec); ``None``:
    none."""


ARM_FIELDS: tuple[tuple[str, str], ...] = (
    ("suite_id", "the suite id"),
    ("suite_hash", "the suite's content hash"),
    ("harness_version", "the alisio version"),
    ("config_hash", "the configuration hash"),
    ("agent", "the agent"),
    ("agents", "the agent's kind, version or settings"),
    ("context", "the context"),
    ("provider", "the provider"),
    ("model", "the model"),
    ("endpoint", "the endpoint"),
    ("mode", "the mode"),
    ("sandbox", "the sandbox"),
    ("script_hash", "the --script content"),
    ("faults", "the injected faults"),
)
"""Each field of an ``ArmKey`` and how a difference in it is named."""


def shown(value: object) -> str:
    """A value as a one-line message shows it: ``none``; a sha256 cut to 16 digits; agents by name@version."""
    if value is None:
        return "none"
    if isinstance(value, tuple):
        items = [f"{a.name} {a.kind} {a.version}" if isinstance(a, ManifestAgent) else str(a) for a in value]
        return ", ".join(items) or "none"
    text = str(value)
    return text[:16] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def _agents_of(manifest: RunManifest, agent: str | None) -> tuple[ManifestAgent, ...]:
    if agent is None:
        return manifest.agents
    return tuple(a for a in manifest.agents if a.name == agent)


def arm_keys(manifest: RunManifest) -> dict[str | None, ArmKey]:
    """Each arm's key, by variant id (``None``: the one arm of a plain run)."""

    def key(
        config_hash: str, model: str | None, agent: str | None, faults: str | None, context: str | None
    ) -> ArmKey:
        return ArmKey(
            suite_id=manifest.suite_id,
            suite_hash=manifest.suite_hash,
            harness_version=manifest.harness_version,
            config_hash=config_hash,
            provider=manifest.provider,
            model=model or manifest.model,
            endpoint=manifest.endpoint,
            mode=str(manifest.mode),
            agent=agent,
            agents=_agents_of(manifest, agent),
            sandbox=manifest.sandbox,
            script_hash=manifest.script_hash,
            faults=faults,
            context=context,
        )

    if not manifest.variants:
        return {None: key(manifest.config_hash, None, manifest.agent, manifest.faults, manifest.context)}
    return {
        v.id: key(v.config_hash, v.model, v.agent or manifest.agent, v.faults, v.context)
        for v in manifest.variants
    }


def run_fingerprint(key: ArmKey, task_id: str, repetition: int) -> str:
    """The fingerprint of one run (module docstring): 16 hex digits."""
    digest = hashlib.sha256(_ENCODER.encode(key))
    digest.update(f"\0{task_id}\0{repetition}".encode())
    return digest.hexdigest()[:16]


def key_differences(theirs: ArmKey, ours: ArmKey, there: str = "there", here: str = "here") -> list[str]:
    """``the model differs: a there, b here``, one per field of the keys that differs."""
    lines = []
    for field, what in ARM_FIELDS:
        before, now = getattr(theirs, field), getattr(ours, field)
        if before != now:
            lines.append(f"{what} differs: {shown(before)} {there}, {shown(now)} {here}")
    return lines


def verdict_rule(manifest: RunManifest) -> str | None:
    """The verdict rule of the plan's comparison (``eval variants``); ``None`` for a plain run."""
    return VERDICT_RULE if manifest.variants else None


def _arm_order(item: tuple[str | None, ArmKey]) -> str:
    return item[0] or ""


def plan_digest(manifest: RunManifest, plan: Sequence[RunSpec]) -> str:
    """The digest of the plan ``manifest`` describes and ``plan`` orders (module docstring)."""
    material = {
        "arms": [[variant or "", key] for variant, key in sorted(arm_keys(manifest).items(), key=_arm_order)],
        "suiteVersion": manifest.suite_version,
        "tasks": list(manifest.tasks),
        "k": manifest.k,
        "seed": manifest.seed,
        "granted": list(manifest.granted),
        "readOnly": manifest.read_only,
        "variants": [v.id for v in manifest.variants],
        "sequential": manifest.sequential,
        "verdictRule": verdict_rule(manifest),
        "runs": [[s.variant or "", s.task_id, s.repetition, s.seed] for s in plan],
    }
    return hashlib.sha256(_ENCODER.encode(material)).hexdigest()


def planned_runs(manifest: RunManifest, plan: Sequence[RunSpec]) -> tuple[PlannedRun, ...]:
    """Every run of ``plan`` with its seed and fingerprint (what ``eval plan`` writes)."""
    keys = arm_keys(manifest)
    return tuple(
        PlannedRun(
            task_id=s.task_id,
            repetition=s.repetition,
            variant=s.variant,
            seed=s.seed,
            fingerprint=run_fingerprint(keys[s.variant], s.task_id, s.repetition),
        )
        for s in plan
    )


_PLAN_FIELDS: tuple[tuple[str, Callable[[RunManifest], object]], ...] = (
    ("the suite id", lambda m: m.suite_id),
    ("the suite version", lambda m: m.suite_version),
    ("the suite's content hash", lambda m: m.suite_hash),
    ("the configuration hash", lambda m: m.config_hash if not m.variants else None),
    ("the variants", lambda m: tuple((v.id, v.config_hash, v.model, v.agent) for v in m.variants) or None),
    ("the agent", lambda m: m.agent),
    ("the agents' kind, version or settings", lambda m: m.agents),
    ("the context", lambda m: m.context if not m.variants else tuple((v.id, v.context) for v in m.variants)),
    ("the model", lambda m: m.model),
    ("the endpoint", lambda m: m.endpoint),
    ("the provider", lambda m: m.provider),
    ("the mode", lambda m: str(m.mode)),
    ("the seed", lambda m: m.seed),
    ("k", lambda m: m.k),
    ("the tasks", lambda m: ",".join(m.tasks)),
    ("the verdict rule", verdict_rule),
    ("the alisio version", lambda m: m.harness_version),
    ("the sandbox", lambda m: m.sandbox),
    ("the --script content", lambda m: m.script_hash),
    ("the grants", lambda m: ",".join(m.granted) + (" (read-only)" if m.read_only else "")),
    ("the rates", lambda m: m.rates),
    ("the plan digest", lambda m: m.digest),
)


def _variants_shown(value: object) -> str:
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return ", ".join(f"{v[0]} ({shown(v[1])})" for v in value)
    return shown(value)


def plan_differences(first: RunManifest, other: RunManifest) -> list[tuple[str, str, str]]:
    """Each field ``other`` differs from ``first`` in, as ``(field, first's value, other's value)``, in the
    order of the module docstring; empty when they are the same plan."""
    found = []
    for what, get in _PLAN_FIELDS:
        a, b = get(first), get(other)
        if a != b:
            found.append((what, _variants_shown(a), _variants_shown(b)))
    return found
