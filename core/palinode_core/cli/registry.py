"""The command table: each command module lists its commands as values; the
parser is built from the modules named in ``__init__`` (nothing registers
itself on import)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Handler = Callable[[argparse.Namespace], dict[str, Any]]
Configure = Callable[[argparse.ArgumentParser], None]


def _no_arguments(_parser: argparse.ArgumentParser) -> None:
    pass


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Handler
    configure: Configure = _no_arguments
    takes_store: bool = True
    as_of: bool = False  # also reads the store as of a commit or a date (--at / --as-of)
