"""Process-wide settings that only an application may choose: called by entry points, never on import.

    from engine.runtime import configure_threads
    configure_threads()          # kioku's CLI and service do this at start; a host app may too

A library that sets thread counts when imported or when an object is built changes every other
library in the host process behind its back, so nothing in `engine` does that except here.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def configure_threads(*, faiss_threads: int = 1) -> None:
    """Thread settings for serving memory: faiss searches on `faiss_threads` OpenMP threads.

    Kioku's faiss searches are single small flat scans per prompt, where a second OpenMP thread
    only adds synchronisation (measured ~3x slower with the default of one thread per core), and
    prompts already run in parallel on their own threads. Calling it again is harmless."""
    try:
        import faiss
    except ImportError:  # pragma: no cover - faiss-cpu is a dependency; nothing to configure without it
        log.debug("faiss is not installed; no thread count to set")
        return
    faiss.omp_set_num_threads(faiss_threads)
