"""How ``alisio --help`` reads: plain metavars instead of type placeholders, commands in workflow order.

typer renders a type after every option (``<bool>`` after a flag, ``<int range> [x>=1]``, ``<path>``) and
wraps required arguments in braces in usage lines (``{suite}``). People read ``--k N`` and ``SUITE``:

- ``Command`` (every command's class) shows an option's ``metavar`` (``N``, ``DIR``, ``FILE``...) and nothing
  for a flag, no range (ranges are checked by the command, with a one-line error), and arguments in upper case
  without braces (``alisio eval run [OPTIONS] SUITE``);
- ``Group`` lists its commands in the order they were added (the workflow order), not alphabetically.

These hook typer's own help rendering, so typer is pinned to the minor version they were written against
(pyproject.toml); ``tests/integration/test_cli_help.py`` fails if an update brings the placeholders back.
"""

from __future__ import annotations

from typing import Any

from typer import _click as click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ["Command", "Group"]


class _Argument(TyperArgument):
    """An argument shown by its upper-case name: ``SUITE``, in usage lines and help alike."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar or (self.name or "").upper()

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if self.nargs != 1:
            name += "..."
        return name if self.required else f"[{name}]"

    def _get_number_range_help_str(self) -> str | None:
        return None


class _Option(TyperOption):
    """An option shown by its metavar (``--k N``), a flag by its name alone."""

    def display_type_rich(self, ctx: click.Context) -> str | None:
        if self.is_flag:
            return None
        return self.metavar or (self.name or "value").upper()

    def _get_number_range_help_str(self) -> str | None:
        return None


_QUIET: dict[type[object], type[object]] = {TyperArgument: _Argument, TyperOption: _Option}


def _quiet(param: object) -> None:
    """Show ``param`` the quiet way (its class swapped for the subclass above, state untouched)."""
    quiet = _QUIET.get(type(param))
    if quiet is not None:
        setattr(param, "__class__", quiet)  # noqa: B010 (mypy refuses a class swap by assignment)


class Command(TyperCommand):
    """A command whose help shows metavars, not type placeholders (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _quiet(param)

    def get_help_option(self, ctx: click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _quiet(option)
        return option


class Group(TyperGroup):
    """A group that lists its commands in the order they were added, its help options the quiet way."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _quiet(param)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def get_help_option(self, ctx: click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _quiet(option)
        return option
