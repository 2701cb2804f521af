"""Typed failure payloads of the core's ``Result``-returning functions.

Every error is a frozen, tagged Struct: consumers ``match`` on the class, and the shell turns each into one
clear line and an exit code at its edge. The tree::

    CoreError
    ├── SuiteError            a suite.json violates the spec (file, task id, field path, message)
    ├── InsufficientData      a statistic is undefined for these counts (n = 0, n < k)
    ├── ReportError           a report.json / runs.jsonl cannot be read as a report
    ├── IncompatibleReports   compare refused: different suiteId or suiteVersion (exit 3)
    ├── ConfigError           a configuration file or flag is invalid (file, key, message)
    └── PowerInputError       a flag of ``alisio eval power`` is missing, not a number or out of range
"""

from __future__ import annotations

from alisio.core.base import Frozen


class SuiteError(Frozen, frozen=True, kw_only=True, tag="suite_error"):
    """A suite.json that violates the spec. ``str()`` is the one-line message users see."""

    source: str
    """The file (or other source name) the suite came from."""
    message: str
    """What is wrong, prefixed with ``task <id>: <field path>:`` when it concerns a task."""

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


class InsufficientData(Frozen, frozen=True, kw_only=True, tag="insufficient_data"):
    """A statistic that is undefined for the given counts (for example n = 0, or fewer runs than k)."""

    message: str

    def __str__(self) -> str:
        return self.message


class ReportError(Frozen, frozen=True, kw_only=True, tag="report_error"):
    """A report file that cannot be read as a report."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


class IncompatibleReports(Frozen, frozen=True, kw_only=True, tag="incompatible_reports"):
    """Two reports that must not be compared: different suiteId or suiteVersion."""

    message: str

    def __str__(self) -> str:
        return self.message


class ConfigError(Frozen, frozen=True, kw_only=True, tag="config_error"):
    """An invalid configuration: names the file and the key."""

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}: {self.key}" if self.key else self.source
        return f"{where}: {self.message}"


class PowerInputError(Frozen, frozen=True, kw_only=True, tag="power_input_error"):
    """A flag of ``alisio eval power`` that is missing, not a number or out of range."""

    flag: str
    """The flag as typed, for example ``--baseline-rate``."""
    message: str

    def __str__(self) -> str:
        return f"{self.flag}: {self.message}"


CoreError = SuiteError | InsufficientData | ReportError | IncompatibleReports | ConfigError | PowerInputError
