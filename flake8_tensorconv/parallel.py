"""Run a function over tasks in worker processes: the standard library's process pool.

Workers are forked on Linux (they start with the rules already imported) and spawned
elsewhere, where fork is missing or unsafe. They receive the function and the tasks once,
when they start, and then only task numbers; each result comes back pickled. A task that
raises in a worker, or whose worker dies, is done again by the parent once the pool has
finished, so that an error shows there as it is and a lost worker loses no result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

_Task = TypeVar("_Task")
_Result = TypeVar("_Result")

# A worker's function and tasks, given once when it starts (inherited, not pickled, when forked).
_work: tuple[Callable[[Any], Any], Sequence[Any]] | None = None


def run_tasks(function: Callable[[_Task], _Result], tasks: Sequence[_Task], jobs: int) -> list[_Result]:
    """``[function(task) for task in tasks]``, computed in up to ``jobs`` processes."""
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        return [function(task) for task in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, wait

    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=(function, tasks))
    try:
        futures = [pool.submit(_run_task, index) for index in range(len(tasks))]
        wait(futures)
    finally:
        pool.shutdown(cancel_futures=True)  # after an interrupt: start nothing more
    # What a worker could not do (it raised, or died): done here, where an error shows as it is.
    return [function(task) if future.exception() else future.result() for future, task in zip(futures, tasks)]


def _start_worker(function: Callable[[Any], Any], tasks: Sequence[Any]) -> None:
    import gc

    global _work
    _work = function, tasks
    # The garbage collector would walk (and so copy, page by page) every object a forked
    # worker inherited; frozen, they are left alone.
    gc.freeze()


def _run_task(index: int) -> Any:
    assert _work is not None, "a task reached a process the pool did not start"
    function, tasks = _work
    return function(tasks[index])
