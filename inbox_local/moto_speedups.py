"""moto, cheaper per request: caches of what it recomputes on every request, and nothing that changes what a call
does or answers. Installed by the embedded AWS (inbox_local/embedded_aws.py) and by the test process
(tests/aws_speedups.py).

Measured with py-spy on the embedded AWS during `inbox simulate --payments 42` (samples holding the GIL), before:
- moto's response serializer asked each of its six alias providers, for every member of every structure of every
  response (each attribute of each DynamoDB item), which names the member's value may have on the Python object,
  building a context object and six provider objects each time: ~35 % of the process's CPU, most of it to learn
  again what depends only on the member, its shape and the object's class;
- the server listed moto's package folder (`os.listdir` and an `isdir` per entry) on every request to tell a
  module name from a host name: ~5 %.
"""

from __future__ import annotations

import functools
from typing import Any

_installed = False
# A response model's members are a few thousand; error shapes are made anew per answer, so the cache is bounded.
POSSIBLE_KEYS_CACHE_ENTRIES = 50_000


def _cache_module_list() -> None:
    from moto import backends  # noqa: PLC0415 (moto only once the environment is set)

    modules = tuple(backends.list_of_moto_modules())  # moto's own package folders: fixed while the process runs
    backends.list_of_moto_modules = lambda: modules


def _alias_cache_key(picker: Any, obj: Any, key: str, shape: Any) -> tuple[Any, ...] | None:
    """What the alias providers' answer depends on (moto/core/serialize.py: ExplicitAlias reads the object's
    `Meta`, ClassPrefixAlias its class name, ShapeNameAlias, ShapePrefixAlias and ModelAlias the shape, its parent
    and its serialization name), or None when an object carries a `Meta` of its own (then nothing is cached)."""
    if "Meta" in getattr(obj, "__dict__", ()):
        return None
    return (type(picker), tuple(picker.alias_providers), key, shape, getattr(shape, "parent", None), type(obj))


def _cache_serializer_value_picks() -> None:
    from moto.core import serialize  # noqa: PLC0415
    from moto.core.constants import MISSING  # noqa: PLC0415
    from moto.core.utils import get_value  # noqa: PLC0415

    original_get_value = serialize.ResponseSerializer.get_value
    possible_keys: dict[tuple[Any, ...], tuple[str, ...]] = {}
    cached_pickers = (serialize.AttributePicker, serialize.XFormedAttributePicker)

    @functools.wraps(original_get_value)
    def get_value_with_cached_keys(self: Any, value: Any, key: str, shape: Any) -> Any:
        picker = self._value_picker
        # AttributePicker.__call__ without response transformers: the first possible key the object has, else None
        if type(picker) not in cached_pickers or picker.response_transformers:
            return original_get_value(self, value, key, shape)
        cache_key = _alias_cache_key(picker, value, key, shape)
        keys = possible_keys.get(cache_key) if cache_key is not None else None
        if keys is None:
            context = serialize.AttributePickerContext(
                obj=value,
                key=key,
                shape=shape,
                operation_model=self.operation_model,
                service_model=self.operation_model.service_model,
                key_path=".".join(self.path),
            )
            keys = tuple(picker.get_possible_keys(context))
            if cache_key is not None:
                if len(possible_keys) >= POSSIBLE_KEYS_CACHE_ENTRIES:
                    possible_keys.clear()  # shapes made per error answer are new objects: keep it bounded
                possible_keys[cache_key] = keys
        for possible_key in keys:
            picked = get_value(value, possible_key, MISSING)
            if picked is not MISSING:
                return picked
        return None

    serialize.ResponseSerializer.get_value = get_value_with_cached_keys  # type: ignore[method-assign]


def install() -> None:
    """Once per process."""
    global _installed  # noqa: PLW0603
    if _installed:
        return
    _installed = True
    _cache_module_list()
    _cache_serializer_value_picks()
