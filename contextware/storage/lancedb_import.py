"""Cut ``import lancedb`` from ~1.1 s to ~0.55 s.

``lancedb`` imports ``lance_namespace``, whose generated REST client package
(``lance_namespace_urllib3_client``) eagerly builds every API class in its ``__init__`` (~0.5 s of
pydantic validation decorators) although a local or object-store database never uses them.  We
register the package without running its ``__init__``; its submodules (the models lancedb needs) import
normally, and the first attribute read from the package itself runs the real ``__init__``, so
nothing is lost if a REST namespace is ever used.  Verified with lancedb 0.40 and
lance-namespace 0.13; on any surprise we fall back to the plain import.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any

_LAZY_PACKAGE = "lance_namespace_urllib3_client"


def _install_lazy_package(name: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__file__ = spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name

    def __getattr__(attr: str) -> Any:  # PEP 562: only called for missing attributes
        if attr.startswith("__"):
            raise AttributeError(attr)
        module.__dict__.pop("__getattr__", None)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return getattr(module, attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module


def import_lancedb() -> types.ModuleType:
    if "lancedb" not in sys.modules:
        # Lance logs warnings (deprecations, "creating a new dataset") from Rust on stderr.  Lance's
        # own variable, read by its Rust side from the process environment (not a setting of ours).
        os.environ.setdefault("LANCEDB_LOG", "error")
        try:
            _install_lazy_package(_LAZY_PACKAGE)
        except Exception:  # noqa: BLE001 - an optimisation only
            sys.modules.pop(_LAZY_PACKAGE, None)
    import lancedb

    return lancedb
