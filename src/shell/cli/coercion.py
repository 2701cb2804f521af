"""Command-line values coerced without pydantic where typer's answer is plain; typer for everything else.

typer 0.29 (pinned in pyproject.toml) coerces every parameter through a pydantic ``TypeAdapter`` built on
first use: importing pydantic and building the adapters of the handful of parameters a call sets cost about
a fifth of a command's start-up (``bench/bench_commands.py``). ``install`` makes
``_TyperParameter.process_value`` give typer's own answer without an adapter where that answer is plain:

- an unset value (``None``: not given, no default) is ``None``, or ``()`` for a multiple option, as typer's
  coercion returns without using its adapter;
- a ``str`` is itself; a ``bool`` is itself (typer skips a flag's coercion too);
- an ``int`` or a ``float`` is itself; a string of plain decimal digits (``5``, ``-12``, ``0.25``) is
  ``int(value)`` or ``float(value)``, what pydantic's lax parse gives;
- an ``Enum`` choice goes through typer's own ``coerce_cli_choice``; a ``Path`` is ``Path(value)`` (what
  pydantic's path validator builds) through typer's own ``coerce_cli_path``;
- a ``list`` of those (``nargs=-1``, or an option given several times) is the list of its items so coerced.

Anything else (another type, a parser, a range, a file, a value that is not plainly one of those, any
error) goes through typer unchanged: the same coercion and the same error messages.
``tests/integration/cli/test_command_cost.py`` checks every parameter of every command against typer's own
coercion, so an update of typer that answers differently fails there.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any, Final, get_args, get_origin

from typer import _click as click
from typer._param_types import coerce_cli_choice, coerce_cli_path
from typer.core import _TyperParameter
from typer.models import ParameterInfo

__all__ = ["DECLINED", "coerced", "install"]

_original = _TyperParameter.process_value

DECLINED: Final = object()
"""What ``coerced`` returns when typer's own coercion must answer."""

_INT: Final = re.compile(r"-?[0-9]{1,18}")
_FLOAT: Final = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")


def _leaf(annotation: Any, info: ParameterInfo, value: Any, ctx: click.Context | None) -> Any:
    """``value`` as typer coerces it to ``annotation``, or ``DECLINED``."""
    kind = type(value)
    if annotation is str or annotation is bool:
        return value if kind is annotation else DECLINED
    if annotation is int:
        if kind is int:
            return value
        return int(value) if kind is str and _INT.fullmatch(value) else DECLINED
    if annotation is float:
        if kind is float or kind is int:
            return float(value)
        return float(value) if kind is str and _FLOAT.fullmatch(value) else DECLINED
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return coerce_cli_choice(
            value, choices=tuple(annotation), case_sensitive=info.case_sensitive, ctx=ctx
        )
    if annotation is Path and info.path_type is None and kind is str:
        return coerce_cli_path(Path(value), info, path_type=Path, ctx=ctx)
    return DECLINED


def coerced(param: _TyperParameter, ctx: click.Context | None, value: Any) -> Any:
    """``value`` (not ``None``) coerced as typer coerces it for ``param``, or ``DECLINED`` (typer must)."""
    descriptor = param.type_descriptor
    info = descriptor.parameter_info
    plain = info.parser is None and descriptor.file_annotation is None and not info.clamp
    if not plain or info.min is not None or info.max is not None:
        return DECLINED
    annotation = descriptor.annotation
    multiple = param.multiple or param.nargs == -1
    origin: Any = get_origin(annotation)
    if not multiple and origin is None:
        return _checked_leaf(annotation, info, value, ctx)
    if not (multiple and origin is list and isinstance(value, list | tuple)):
        return DECLINED
    (item,) = get_args(annotation)
    items = [_checked_leaf(item, info, one, ctx) for one in value]
    return DECLINED if any(one is DECLINED for one in items) else items


def _checked_leaf(annotation: Any, info: ParameterInfo, value: Any, ctx: click.Context | None) -> Any:
    try:
        return _leaf(annotation, info, value, ctx)
    except Exception:  # a value typer refuses: its own coercion says what is wrong, in its words
        return DECLINED


def _process_value(self: _TyperParameter, ctx: click.Context, value: Any) -> Any:
    if self._runtime_param is not None:
        return _original(self, ctx, value)
    if value is None:
        value = () if self.multiple or self.nargs == -1 else None  # what RuntimeParam.coerce returns for None
    else:
        plain = coerced(self, ctx, value)
        if plain is DECLINED:
            return _original(self, ctx, value)
        value = plain
    if self.required and self.value_is_missing(value):
        raise click.exceptions.MissingParameter(ctx=ctx, param=self)
    if self.callback is not None:
        value = self.callback(ctx, self, value)
    return value


def install() -> None:
    """Coerce plain values without pydantic (idempotent)."""
    _TyperParameter.process_value = _process_value  # type: ignore[method-assign]
