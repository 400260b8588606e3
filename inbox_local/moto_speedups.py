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
And at start: moto's Step Functions interpreter imports `moto.batch.utils` (an enum, for its Batch task type),
whose package imports Batch's models and, with them, EC2's: 1.7 of the embedded AWS's 2.6 CPU s of imports, paid by
every local stack and test process for services nothing here calls. The package's own code now runs the first time
one of its names is asked for, as it would have (`_defer_batch_package`).
And one faster implementation that answers the same: moto's DynamoDB Query/Scan sort (inbox_local/moto_query_speedup.py,
compared with moto's own by tests/integration/test_moto_query_speedup.py).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
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


def _defer_batch_package() -> None:
    """`moto.batch` as a package whose `__init__` (which imports its models, and EC2's) runs when a name of it is
    first asked for: its submodules (`moto.batch.utils`) import without it. Nothing changes for a caller of Batch:
    moto's backend lookup asks the package for `batch_backends`, which runs the `__init__` then."""
    if "moto.batch" in sys.modules:
        return
    spec = importlib.util.find_spec("moto.batch")
    if spec is None or spec.loader is None:
        return
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader
    initialised = False

    def __getattr__(name: str) -> Any:  # a module's attribute hook (PEP 562)
        nonlocal initialised
        if initialised:
            raise AttributeError(f"module 'moto.batch' has no attribute {name!r}")
        initialised = True
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules["moto.batch"] = package
    setattr(sys.modules["moto"], "batch", package)  # noqa: B010 (what importing the package binds on its parent)


def install() -> None:
    """Once per process, before anything imports moto's Step Functions interpreter."""
    global _installed  # noqa: PLW0603
    if _installed:
        return
    _installed = True
    _defer_batch_package()
    from inbox_local import moto_query_speedup  # noqa: PLC0415 (moto's DynamoDB models, once the package is deferred)

    moto_query_speedup.install()  # every Query and Scan sorted the whole table with a Python call per comparison
    _cache_module_list()
    _cache_serializer_value_picks()
