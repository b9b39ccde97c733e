"""Pause the cyclic garbage collector while a big list is decoded.

Decoding 150,000 pods allocates millions of objects that all survive; every full collection on the
way re-walks the ones already kept, which more than doubles the decode time. Reference counting
still frees everything as usual while paused. Pauses from several reflector threads nest.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
