"""A parameter the command line leaves unset is not coerced: no pydantic ``TypeAdapter`` is built for it.

typer 0.29 (pinned in pyproject.toml) coerces every parameter through a pydantic ``TypeAdapter``, and builds
the adapter of each parameter of the invoked command even when its value is ``None`` (not given, no
default), where the coercion returns ``None`` (``()`` for a multiple option) without using it. ``eval run``
has about 40 parameters and a typical call sets a handful: the adapters cost about a fifth of its start-up.
``install`` makes ``_TyperParameter.process_value`` give that same answer for an unset value without
building the adapter; every other value goes through typer unchanged (the same coercion, the same errors).
"""

from __future__ import annotations

from typing import Any

from typer import _click as click
from typer.core import _TyperParameter

__all__ = ["install"]

_original = _TyperParameter.process_value


def _process_value(self: _TyperParameter, ctx: click.Context, value: Any) -> Any:
    if value is not None or self._runtime_param is not None:
        return _original(self, ctx, value)
    value = () if self.multiple or self.nargs == -1 else None  # what RuntimeParam.coerce returns for None
    if self.required and self.value_is_missing(value):
        raise click.exceptions.MissingParameter(ctx=ctx, param=self)
    if self.callback is not None:
        value = self.callback(ctx, self, value)
    return value


def install() -> None:
    """Skip the adapter of unset parameters (idempotent)."""
    _TyperParameter.process_value = _process_value  # type: ignore[method-assign]
