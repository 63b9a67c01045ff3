"""The worker as the runworkflows process: SIGTERM and SIGINT stop it cleanly, with or without
Django's autoreloader, and a step left behind does not hold the process's exit."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from django.utils import autoreload

from .worker import Worker

logger = logging.getLogger("django_workflows")


def serve(worker: Worker, run: Callable[[], Any] | None = None) -> Any:
    """`run` (worker.run by default) with SIGTERM and SIGINT stopping the worker; a second
    signal exits at once."""
    stops = 0

    def stop(signum: int, frame: Any) -> None:
        nonlocal stops
        stops += 1
        if stops > 1:
            os._exit(1)  # a second signal: exit at once
        worker.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    result = (run or worker.run)()
    if worker.left_behind:
        exit_past(worker, 0)
    return result


def serve_reloading(worker: Worker, before: Callable[[], Any] | None = None) -> None:
    """Serve under Django's autoreloader, as runserver does. The first process only restarts a
    child (which builds its own worker) whenever a file changes, and passes SIGTERM and SIGINT
    on to it; `worker` then only checked the options. The child calls `before` (what only the
    process that runs the worker opens, such as its metrics port), then runs `worker`: a
    changed file stops it, handing its instances back, before the child restarts; SIGTERM or
    SIGINT stop it as serve() does, and the child exits."""
    if os.environ.get(autoreload.DJANGO_AUTORELOAD_ENV) == "true":
        if before is not None:
            before()
        _serve_child(worker)
    else:
        sys.exit(_restart_with_reloader())


def _restart_with_reloader() -> int:
    """autoreload.restart_with_reloader(), passing the first stop signal on to the child and
    waiting for it: Django's own exits at SIGTERM and kills the child at SIGINT, before the
    worker has handed anything back. A second signal kills the child and exits at once. The
    child's exit status."""
    environment = {**os.environ, autoreload.DJANGO_AUTORELOAD_ENV: "true"}
    arguments = autoreload.get_child_arguments()
    child: subprocess.Popen[bytes] | None = None
    stop_signal: int | None = None

    def forward(signum: int, frame: Any) -> None:
        nonlocal stop_signal
        if stop_signal is not None:  # a second signal
            if child is not None:
                child.kill()
            os._exit(1)
        stop_signal = signum
        if child is not None:  # not yet started, or exited to reload: the loop sees to it
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while stop_signal is None:
        child = subprocess.Popen(arguments, env=environment, close_fds=False)
        if stop_signal is not None:  # it came while the child started
            child.send_signal(stop_signal)
        code = child.wait()
        if code != 3:  # 3: the autoreloader's "restart me"
            return code
    return 0  # stopped as the child exited to reload


def _serve_child(worker: Worker) -> None:
    """autoreload.run_with_reloader()'s child: the worker runs on a thread while this one
    watches the files."""
    reloader = autoreload.get_reloader()
    stopped = threading.Event()
    reloading = threading.Event()
    failed: list[BaseException] = []

    def on_change(sender: Any, file_path: Any, **kwargs: Any) -> None:
        logger.info("%s changed: stopping the worker to reload.", file_path)
        reloading.set()
        worker.stop()
        stopped.wait(worker.shutdown_timeout.total_seconds() + 1)
        # Returning nothing, the reloader exits with its "restart me".

    autoreload.file_changed.connect(on_change, weak=False)

    def run() -> None:
        try:
            worker.run()
        except BaseException as error:  # raised again once the watching stops
            failed.append(error)
        finally:
            stopped.set()
        if worker.left_behind:
            exit_past(worker, 3 if reloading.is_set() else 0)
        if not reloading.is_set():
            reloader.stop()

    signalled = False

    def stop(signum: int, frame: Any) -> None:
        # Only the first: a signal to the process group (a terminal's Ctrl-C, `kill -- -PID`)
        # reaches this process and, forwarded, a moment later again. The parent receives each
        # once and ends this process at a second one.
        nonlocal signalled
        if not signalled:
            signalled = True
            worker.stop()
            if stopped.is_set():  # it ended already, with an error
                reloader.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.getLogger("django.utils.autoreload").info(
        "Watching for file changes with %s", type(reloader).__name__
    )
    autoreload.start_django(reloader, run)
    if failed:
        raise failed[0]


def exit_past(worker: Worker, code: int) -> None:
    """Exit now: the interpreter would wait for the threads of steps the worker stopped waiting
    for (Python cannot stop a thread). Their instances keep their leases, which expire as after
    a crash."""
    logger.info("Exiting without waiting for the steps of %s.", ", ".join(worker.left_behind))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
