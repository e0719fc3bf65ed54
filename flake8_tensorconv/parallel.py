"""Run a function over tasks in worker processes, each task going to the next free worker.

On Linux the workers are forked: a forked worker starts in about a millisecond with the
rules already imported. Each worker has a pipe from the parent, which sends it task
numbers one at a time (two in flight, so that it never waits), and a pipe back, on which
it sends each result, pickled. A worker that dies leaves its tasks to the parent, which
runs them itself. Elsewhere (fork is missing or unsafe) the platform's process pool is used.

Why not ``concurrent.futures.ProcessPoolExecutor`` on Linux too: measured for issue 14
(that pool is commit c14771c), its imports (multiprocessing, logging, socket, threading),
queues and threads cost 31-34 ms more CPU per run, and ``bench/pools.py`` (2 shared cores,
two runs of 41 paired rounds) put ``tensorconv check -j2`` at 1.31x this pool's wall time
on 10 files (+72 and +79 ms) and 1.08-1.09x on torch/nn; on all of torch the two were
within the machine's noise. Figures in docs/speed.md.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

_Task = TypeVar("_Task")
_Result = TypeVar("_Result")

_INDEX = 4  # bytes of a task number
_LENGTH = 8  # bytes of a result's length
_IN_FLIGHT = 2  # tasks sent to a worker before it has answered


def run_tasks(
    function: Callable[[_Task], _Result], tasks: Sequence[_Task], jobs: int, done: Callable[[int], None] | None = None
) -> list[_Result]:
    """``[function(task) for task in tasks]``, computed in up to ``jobs`` processes.

    ``done(index)`` is called in this process as each task's result arrives (for a progress bar).
    """
    done = done or _nothing
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        results = []
        for index, task in enumerate(tasks):
            results.append(function(task))
            done(index)
        return results
    if sys.platform.startswith("linux"):
        return _forked(function, tasks, jobs, done)
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = []
        for index, result in enumerate(pool.map(function, tasks)):
            results.append(result)
            done(index)
        return results


def _nothing(index: int) -> None:
    pass


class _Worker:
    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid = pid
        self.tasks = tasks  # write end: task numbers to the worker
        self.results = results  # read end: results from the worker
        self.buffer = bytearray()


def _forked(function: Callable[[_Task], _Result], tasks: Sequence[_Task], jobs: int, done: Callable[[int], None]) -> list[_Result]:
    import pickle
    import selectors

    results: dict[int, _Result] = {}
    workers: list[_Worker] = []
    next_task = 0

    def send(worker: _Worker) -> None:
        nonlocal next_task
        if next_task < len(tasks):
            next_task += 1
            try:
                os.write(worker.tasks, (next_task - 1).to_bytes(_INDEX, "little"))
            except BrokenPipeError:  # the worker died after its last answer: the task is done below
                pass
        elif worker.tasks >= 0:
            os.close(worker.tasks)  # no more work: the worker exits at end of file
            worker.tasks = -1

    # The garbage collector of a worker would walk (and so copy, page by page) every object it
    # inherited; frozen, they are left alone.
    gc.freeze()
    try:
        for _ in range(jobs):
            workers.append(_start(function, tasks, workers))
        gc.unfreeze()
        for worker in workers:
            for _ in range(_IN_FLIGHT):
                send(worker)
        with selectors.DefaultSelector() as selector:
            for worker in workers:
                selector.register(worker.results, selectors.EVENT_READ, worker)
            while selector.get_map():
                for key, _ in selector.select():
                    worker = key.data
                    chunk = os.read(worker.results, 1 << 16)
                    if not chunk:  # the worker exited (or died: its pending tasks are run below)
                        selector.unregister(worker.results)
                        continue
                    worker.buffer += chunk
                    while len(worker.buffer) >= _LENGTH:
                        size = int.from_bytes(worker.buffer[:_LENGTH], "little")
                        if len(worker.buffer) < _LENGTH + size:
                            break
                        index, ok, value = pickle.loads(worker.buffer[_LENGTH : _LENGTH + size])
                        del worker.buffer[: _LENGTH + size]
                        if ok:
                            results[index] = value
                            done(index)
                        send(worker)
    finally:
        gc.unfreeze()
        for worker in workers:
            for descriptor in (worker.tasks, worker.results):
                if descriptor >= 0:
                    os.close(descriptor)
            worker.tasks = worker.results = -1
        for worker in workers:
            os.waitpid(worker.pid, 0)
    # What a worker could not do (it raised, or died): done here, where an error shows as it is.
    for index, task in enumerate(tasks):
        if index not in results:
            results[index] = function(task)
            done(index)
    return [results[index] for index in range(len(tasks))]


def _start(function: Callable[[_Task], _Result], tasks: Sequence[_Task], others: list[_Worker]) -> _Worker:
    task_read, task_write = os.pipe()
    result_read, result_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns
        status = 1
        try:
            for descriptor in (task_write, result_read, *(d for other in others for d in (other.tasks, other.results))):
                os.close(descriptor)
            _serve(function, tasks, task_read, result_write)
            status = 0
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(task_read)
    os.close(result_write)
    return _Worker(pid, task_write, result_read)


def _serve(function: Callable[[_Task], _Result], tasks: Sequence[_Task], task_read: int, result_write: int) -> None:
    import pickle

    while True:
        data = b""
        while len(data) < _INDEX:
            chunk = os.read(task_read, _INDEX - len(data))
            if not chunk:
                return
            data += chunk
        index = int.from_bytes(data, "little")
        try:
            payload = pickle.dumps((index, True, function(tasks[index])), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            payload = pickle.dumps((index, False, None))  # the parent runs it again and sees the error
        message = memoryview(len(payload).to_bytes(_LENGTH, "little") + payload)
        while message:
            message = message[os.write(result_write, message) :]
