"""Function configuration read from the environment once, validated, and passed explicitly.

Every function's settings are one frozen dataclass whose fields say which variable each is read from (`text`,
`whole`, `number`, `text_map`: required when it has no default, ranges for numbers), built by the one helper here
(`EnvironmentSettings.from_environ`) and checked by the same rules when built directly (`__post_init__`). A bad
value is a ConfigurationError naming its variable, raised at the function's first use, not at its first event.

Frozen dataclasses rather than pydantic models: pydantic's import and schema building are measurable on a cold
start, and these are a handful of values. The ingest's and the processor's settings live beside their roots
(shared/ingest.py, shared/process/app.py), so neither creates the other's class on its cold start. (The processor's
settings were a pydantic model until `make bench` showed it was ~200 ms of the processor's cold start.)
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import field
from enum import Enum
from typing import Any, NamedTuple, Self


class ConfigurationError(ValueError):
    pass


# ------------------------------------------------------------------------------------ reading one variable


def required_text(environ: Mapping[str, str], name: str) -> str:
    """A variable that must be set to a non-blank value."""
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is required")
    return value


def integer(
    environ: Mapping[str, str], name: str, default: int, *, low: int | None = None, high: int | None = None
) -> int:
    """A whole number (surrounding blanks ignored), `default` when unset or blank, within [low, high] if given."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigurationError(f"{name} must be within {low}..{high}, got {value}")
    return value


def positive_number(environ: Mapping[str, str], name: str, default: float, *, high: float) -> float:
    """A number in (0, high] (surrounding blanks ignored), `default` when unset or blank. NaN and inf refused."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number, got {raw!r}") from None
    if not 0 < value <= high:  # NaN compares false with everything: refused here too
        raise ConfigurationError(f"{name} must be within (0, {high}], got {raw!r}")
    return value


def text_map(environ: Mapping[str, str], name: str) -> dict[str, str]:
    """A JSON object of non-blank strings (e.g. the stack's `{provider: secret ARN}` maps); empty when unset or
    blank. Refused when set to anything else: a broken deployment fails at cold start, not at the first event."""
    raw = environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a JSON object, got something else") from None
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and isinstance(item, str) and item.strip() for key, item in value.items()
    ):
        raise ConfigurationError(f"{name} must be a JSON object of non-blank strings")
    return {key: item.strip() for key, item in value.items()}


# ------------------------------------------------------------------------------- settings as dataclasses


class Kind(Enum):
    TEXT = "text"
    WHOLE = "whole number"
    NUMBER = "number"
    TEXT_MAP = "JSON object of strings"


_REQUIRED: Any = dataclasses.MISSING
_VARIABLE = "environment variable"  # the field metadata key


class Variable(NamedTuple):
    """Where a setting comes from and what it may be. No default: the variable is required (set, not blank)."""

    name: str
    kind: Kind
    low: float | None = None
    high: float | None = None
    low_exclusive: bool = False
    why: str = ""  # said when a value is out of range: what the bound protects

    def check(self, value: Any) -> None:
        """A value in range (read, or given directly); text is checked when read (set, not blank)."""
        if self.kind not in (Kind.WHOLE, Kind.NUMBER):
            return
        too_low = self.low is not None and (value <= self.low if self.low_exclusive else value < self.low)
        too_high = self.high is not None and value > self.high
        if too_low or too_high or (isinstance(value, float) and not math.isfinite(value)):
            refused = f"{self.name}={value!r} refused: it must be {self._range()}"
            raise ConfigurationError(f"{refused} ({self.why})" if self.why else refused)

    def _range(self) -> str:
        low = None if self.low is None else f"{'above' if self.low_exclusive else 'at least'} {self.low}"
        high = None if self.high is None else f"at most {self.high}"
        return " and ".join(part for part in (low, high) if part) or "finite"

    def read(self, environ: Mapping[str, str], default: Any) -> Any:
        raw = environ.get(self.name, "").strip()
        if not raw:
            if default is _REQUIRED:
                raise ConfigurationError(f"environment variable {self.name} is required")
            return default
        if self.kind is Kind.TEXT:
            return raw
        if self.kind is Kind.TEXT_MAP:
            return text_map(environ, self.name)
        parse = int if self.kind is Kind.WHOLE else float
        try:
            return parse(raw)
        except ValueError:
            raise ConfigurationError(
                f"{self.name} must be {'an integer' if parse is int else 'a number'}, got {raw!r}"
            ) from None


def _setting(variable: Variable, default: Any) -> Any:
    metadata = {_VARIABLE: variable}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def text(name: str, default: str | None = _REQUIRED) -> Any:
    """A text variable; required (set and not blank) unless it has a default. Surrounding blanks are dropped."""
    return _setting(Variable(name, Kind.TEXT), default)


def whole(
    name: str, default: int = _REQUIRED, *, low: int | None = None, high: int | None = None, why: str = ""
) -> Any:
    """A whole number within [low, high]."""
    return _setting(Variable(name, Kind.WHOLE, low, high, why=why), default)


def number(name: str, default: float = _REQUIRED, *, high: float, why: str = "") -> Any:
    """A number in (0, high]: NaN and infinities refused."""
    return _setting(Variable(name, Kind.NUMBER, 0, high, low_exclusive=True, why=why), default)


def text_map_of(name: str) -> Any:
    """A JSON object of non-blank strings; empty when unset."""
    return _setting(Variable(name, Kind.TEXT_MAP), {})


class EnvironmentSettings:
    """The base of every function's settings (a frozen dataclass whose fields are `text`, `whole`, `number` or
    `text_map_of`): read from the environment by `from_environ`, checked in `__post_init__` however built."""

    __slots__ = ()

    def __post_init__(self) -> None:
        for setting in dataclasses.fields(self):  # type: ignore[arg-type]
            variable = setting.metadata.get(_VARIABLE)
            value = getattr(self, setting.name)
            if variable is not None and value is not None:
                variable.check(value)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings from `environ` (the process environment by default); every required variable missing is
        named at once."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        missing: list[str] = []
        for setting in dataclasses.fields(cls):  # type: ignore[arg-type]
            variable = setting.metadata.get(_VARIABLE)
            if variable is None:
                continue
            default = setting.default
            if setting.default_factory is not dataclasses.MISSING:
                default = setting.default_factory()
            if default is _REQUIRED and not env.get(variable.name, "").strip():
                missing.append(variable.name)
                continue
            values[setting.name] = variable.read(env, default)
        if missing:
            raise ConfigurationError(f"environment variable(s) required: {', '.join(missing)}")
        return cls(**values)
