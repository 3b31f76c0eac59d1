"""The store's own ``palinode.config.yaml`` (the knobs Palinode reads), with
Palinode's defaults (spec §4.9)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..errors import PalinodeError
from ..text.document import has_alias, load_yaml
from . import safeio

CONFIG_NAME = "palinode.config.yaml"


@dataclass(frozen=True)
class ForgetKnobs:
    enabled: bool = False
    search_k: int = 10
    min_shared_words: int = 1
    max_targets: int = 2
    min_target_coverage: float = 0.05

    def with_overrides(self, **changes: Any) -> ForgetKnobs:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


@dataclass(frozen=True)
class StoreConfig:
    forget: ForgetKnobs = field(default_factory=ForgetKnobs)
    commit_prefix: str = "palinode"
    exclude_status: tuple[str, ...] = ("archived",)
    source: str | None = None  # the file it came from, for display
    capture_retrievals: bool = True  # instrumentation.capture_retrievals: does Palinode log its deliveries


def _section(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
        if not isinstance(data, dict):
            return {}
    return data


def load_store_config(root: Path) -> StoreConfig:
    path = root / CONFIG_NAME
    try:
        # never through a link: a linked config would be read from outside the store
        raw = safeio.read_bytes(CONFIG_NAME, root, 1024 * 1024)
    except FileNotFoundError:
        return StoreConfig()
    except safeio.LinkRefused:
        raise PalinodeError(f"{CONFIG_NAME} is a symbolic link; it is not followed (replace it with a file)") from None
    except IsADirectoryError:
        return StoreConfig()
    except ValueError:
        raise PalinodeError(f"{CONFIG_NAME} is over 1 MB; not read") from None
    except OSError as exc:
        raise PalinodeError(f"{CONFIG_NAME} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PalinodeError(f"{CONFIG_NAME} cannot be read: {exc.__class__.__name__}") from None
    return config_from_text(text, str(path))


def config_or_defaults(read: Callable[[], StoreConfig]) -> tuple[StoreConfig, str | None]:
    """A config that cannot be read stops no read: Palinode's defaults, and why (the
    caller says it once and refuses writes while it is set)."""
    try:
        return read(), None
    except PalinodeError as exc:
        return StoreConfig(), str(exc)


def config_from_text(text: str, source: str) -> StoreConfig:
    """The config a ``palinode.config.yaml`` text holds (also one read from history)."""
    if has_alias(text):  # a few bytes of anchors expand into gigabytes when read
        raise PalinodeError(f"{CONFIG_NAME} uses YAML anchors/aliases, which it never needs; not read")
    try:
        data = load_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise PalinodeError(f"{CONFIG_NAME} cannot be read: {exc.__class__.__name__}") from None
    except RecursionError:
        raise PalinodeError(f"{CONFIG_NAME} is nested too deeply; not read") from None
    if not isinstance(data, dict):
        raise PalinodeError(f"{CONFIG_NAME} is not a mapping")
    forget = _section(data, "consolidation", "forget")
    defaults = ForgetKnobs()
    try:
        knobs = ForgetKnobs(
            enabled=bool(forget.get("enabled", defaults.enabled)),
            search_k=int(forget.get("search_k", defaults.search_k)),
            min_shared_words=int(forget.get("min_shared_words", defaults.min_shared_words)),
            max_targets=int(forget.get("max_targets", defaults.max_targets)),
            min_target_coverage=float(forget.get("min_target_coverage", defaults.min_target_coverage)),
        )
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(.inf)
        raise PalinodeError(f"{CONFIG_NAME}: consolidation.forget has a bad value ({exc})") from None
    prefix = _section(data, "git").get("commit_prefix", "palinode")
    exclude = _section(data, "search").get("exclude_status", ["archived"])
    capture = str(_section(data, "instrumentation").get("capture_retrievals", True)).strip().lower()
    return StoreConfig(
        knobs, str(prefix), tuple(str(s) for s in exclude or ()), source, capture not in ("false", "0", "no", "off")
    )
