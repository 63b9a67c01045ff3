"""Whether the database has the store's routines is asked once per process and alias: threads
that ask at once (a worker's, as it starts) wait for the first one's answer."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, connections

from django_workflows.store.backends.writes import Routines

pytestmark = pytest.mark.django_db(transaction=True)


def test_threads_that_ask_at_once_send_one_probe() -> None:
    routines = Routines("SELECT %s", [1])
    probes: list[str] = []
    answers: list[bool] = []

    def slow(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql == "SELECT %s":  # not the statements that set a new connection up
            probes.append(sql)
            time.sleep(0.2)  # the others ask meanwhile
        return execute(sql, params, many, context)

    def ask() -> None:
        try:
            with connection.execute_wrapper(slow):
                answers.append(routines.available(connection))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert answers == [True] * 4
    assert probes == ["SELECT %s"]
