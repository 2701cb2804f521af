"""How ``alisio --help`` reads: plain metavars instead of type placeholders, commands in workflow order.

typer renders a type after every option (``<bool>`` after a flag, ``<int range> [x>=1]``, ``<path>``) and
wraps required arguments in braces in usage lines (``{suite}``). People read ``--k N`` and ``SUITE``:

- ``Command`` (every command's class) shows an option's ``metavar`` (``N``, ``DIR``, ``FILE``...) and nothing
  for a flag, no range (ranges are checked by the command, with a one-line error), and arguments in upper case
  without braces (``alisio eval run [OPTIONS] SUITE``);
- ``Group`` lists its commands in the order they were added (the workflow order), not alphabetically;
  ``LazyGroup`` imports a command's module only when the command is used;
- both import typer's help renderer without the two rich modules it imports and the help never uses
  (``import_help_renderer``): a third of ``alisio --help``'s start-up (``bench/bench_startup.py``).

These hook typer's own help rendering, so typer is pinned to the minor version they were written against
(pyproject.toml); ``tests/integration/cli/test_cli_conventions.py`` fails if an update brings the placeholders back
or the help loads those modules again.
"""

from __future__ import annotations

import difflib
import importlib
import sys
import threading
import types
from typing import Any, ClassVar

import typer
from typer import _click as click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from alisio.core.manual import docs_reference

__all__ = ["Command", "Group", "LazyGroup", "colour_wanted", "disable_colour", "import_help_renderer"]

_COLOUR_OFF = False
"""Set by ``--no-color`` (``disable_colour``) for the whole command."""


def disable_colour() -> None:
    """``--no-color``: no colour in progress lines or help, whatever the terminal (as ``NO_COLOR`` does)."""
    global _COLOUR_OFF
    _COLOUR_OFF = True
    if "typer.rich_utils" in sys.modules:
        _no_colour_help()


def _no_colour_help() -> None:
    rich_utils: Any = sys.modules["typer.rich_utils"]
    rich_utils.COLOR_SYSTEM = None  # typer's own switch: its help console then prints no colour


def colour_wanted() -> bool:
    """Whether terminal output may be coloured: not with ``--no-color``, nor with ``NO_COLOR`` set and
    non-empty (no-color.org)."""
    import os

    return not _COLOUR_OFF and not os.environ.get("NO_COLOR")


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


class _QuietHelp(click.Command):
    """Help with metavars instead of type placeholders, rendered without typer's unused imports.

    Comes first in ``Command``'s and ``Group``'s bases, so ``super()`` here is typer's class.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _quiet(param)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        for param in params:  # also the ones added after __init__ (typer's --install-completion)
            _quiet(param)
        return params

    def get_help_option(self, ctx: click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _quiet(option)
        return option

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import_help_renderer()
        super().format_help(ctx, formatter)


class Command(_QuietHelp, TyperCommand):
    """A command whose help shows metavars, not type placeholders (see the module docstring)."""


class Group(_QuietHelp, TyperGroup):
    """A group that lists its commands in the order they were added, its help options the quiet way."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


class LazyGroup(Group):
    """A group whose commands named in ``lazy`` are imported and built on first use, listed first, in order.

    ``lazy`` maps a command's name to where its function is (module, attribute); typer builds the command
    from the function as ``@app.command`` would. A command that is not used is never imported: ``alisio
    --help`` and ``alisio eval run`` do not pay for the eval commands' imports and options (a group's help
    imports its own commands, for their help lines).
    """

    lazy: ClassVar[dict[str, tuple[str, str]]] = {}
    docs: ClassVar[dict[str, str]] = {}
    """Each lazy command's documentation (a page and heading of the repository, ``docs/lab.md#reports``): its
    help's last line names it as ``alisio help lab#reports``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.lazy, *(name for name in self.commands if name not in self.lazy)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, attribute = self.lazy[cmd_name]
            single = typer.Typer(add_completion=False)
            docs = self.docs.get(cmd_name)
            epilog = f"Docs: alisio help {docs_reference(docs)}" if docs else None
            function = getattr(importlib.import_module(module), attribute)
            single.command(cmd_name, cls=Command, epilog=epilog)(function)
            self.commands[cmd_name] = typer.main.get_command(single)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError as error:  # typer suggests from the commands built so far only
            close = difflib.get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if self.suggest_commands and close:
                message = error.message.split(". Did you mean ")[0].rstrip(".")
                error.message = f"{message}. Did you mean {', '.join(map(repr, close))}?"
            raise


class _LoadedOnUse(type):
    """A stand-in class that imports the real one (``module.name``) the first time it is called or read."""

    _module: str
    _name: str

    def _real(cls) -> Any:
        return getattr(importlib.import_module(cls._module), cls._name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, attr: str) -> Any:
        return getattr(cls._real(), attr)


# typer's help module imports these at its top; alisio's help never builds them (markup mode "rich", and
# exceptions are reported by alisio.shell.cli.main), and their imports (markdown-it, pygments' machinery)
# cost 100 ms of every ``--help``.
_UNUSED_BY_HELP = (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))


_IMPORTING = threading.Lock()


def import_help_renderer() -> None:
    """Import ``typer.rich_utils`` without paying for the rich modules above (they load if ever used).

    Stand-ins sit in ``sys.modules`` only while typer's module imports. Help renders on the main thread
    before any run starts, when no other thread imports rich; the lock keeps two calls from interleaving.
    Any later ``import rich.markdown`` gets the real module, and typer's references load it on first use.
    Nothing to do when typer runs without rich (``TYPER_USE_RICH=0``).
    """
    with _IMPORTING:
        if "typer.rich_utils" not in sys.modules and typer.core.HAS_RICH:
            _import_with_stand_ins()
            if _COLOUR_OFF:
                _no_colour_help()


def _import_with_stand_ins() -> None:
    stand_ins: dict[str, types.ModuleType] = {}
    for module, name in _UNUSED_BY_HELP:
        if module not in sys.modules:
            stand_in = types.ModuleType(module)
            setattr(stand_in, name, _LoadedOnUse(name, (), {"_module": module, "_name": name}))
            stand_ins[module] = sys.modules[module] = stand_in
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for module, stand_in in stand_ins.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]
