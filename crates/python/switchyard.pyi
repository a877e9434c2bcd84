"""Type stubs of the `switchyard` package (a Rust extension module).

Every method that embeds text releases the GIL. Answers are plain dicts and lists shaped as the
`switchyard` command's `--json` output.
"""

from os import PathLike
from typing import Any, Optional, Union

__version__: str

_Path = Union[str, PathLike[str]]

class SwitchyardError(Exception):
    """An index, model or memory store that cannot be used; the message names the file and the fix."""

class Router:
    """Routes tasks: mode, tools and skills, with every score and reason."""

    def __init__(
        self,
        index: _Path,
        *,
        model: Optional[str] = None,
        max_tools: Optional[int] = None,
        cache_size: int = 256,
    ) -> None: ...
    def route(
        self,
        task: str,
        *,
        mode: Optional[str] = None,
        interactive: bool = False,
        git_changes: bool = False,
    ) -> dict[str, Any]:
        """The decision for `task`, as `switchyard route --json` prints it."""
    def screen(self, texts: list[str]) -> dict[str, Any]:
        """Screens untrusted texts window by window, as `switchyard screen --json`."""
    @property
    def model(self) -> str: ...
    @property
    def index(self) -> str: ...

class Assembler:
    """Assembles prompts: layers, trust wrapper, budgets, fingerprints."""

    def __init__(
        self,
        index: _Path,
        *,
        memory: Optional[_Path] = None,
        prompts: Optional[_Path] = None,
        budget: int = 4000,
        tokenizer: str = "cl100k",
        model: Optional[str] = None,
        trace: Optional[_Path] = None,
    ) -> None: ...
    def assemble(
        self,
        task: str,
        *,
        mode: Optional[str] = None,
        root: Optional[_Path] = None,
        interactive: bool = False,
        git_changes: Optional[bool] = None,
        retry: Optional[str] = None,
        continuation: Optional[str] = None,
        tool_recovery: Optional[str] = None,
        orchestration: Optional[str] = None,
        context: Optional[str] = None,
        now: bool = False,
        profile: str = "full",
        history: Optional[list[dict[str, str]]] = None,
        session: Optional[str] = None,
        clarify: bool = False,
    ) -> dict[str, Any]:
        """The prompt and its full account, as `switchyard assemble --json` prints it; the
        per-turn arguments fill the THIS TURN layer after the cache boundary. `clarify` adds
        one line to the task when it leaves its intent or target unsaid."""
    def route(
        self,
        task: str,
        *,
        mode: Optional[str] = None,
        interactive: bool = False,
        git_changes: bool = False,
    ) -> dict[str, Any]: ...
    def screen(self, texts: list[str]) -> dict[str, Any]: ...

class Memory:
    """The store of untrusted memory and activity, embedded once on write with the index's model."""

    def __init__(self, db: _Path, *, index: _Path, model: Optional[str] = None) -> None: ...
    def add(self, text: str, *, kind: str = "memory", source: str = "python") -> int:
        """Stores `text`, screens it and records the verdict for assemblies with this index; returns its id.
        `kind`: memory, activity, or an instruction-like kind."""
    def list(self) -> list[dict[str, Any]]: ...
    def remove(self, id: int) -> bool: ...
    def reembed(self, *, all: bool = False) -> int: ...
