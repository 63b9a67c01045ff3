"""PostgreSQL's write functions called through libpq on psycopg's own connection
(store/backends/postgresql/libpq.py): the same row as a cursor's, Django's errors, never a
statement outside the transaction psycopg has yet to begin, the cursor's way where Django logs
or wraps the statements, and a statement cancelled or a connection killed by the server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from django.db import (
    DatabaseError,
    DataError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.models import JSONField
from django.test.utils import CaptureQueriesContext
from psycopg import pq

from django_workflows.store.backends import driver
from django_workflows.store.backends.postgresql import libpq

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="only PostgreSQL's store calls libpq itself"
)

TEXT = 'it\'s 100% "quoted" \\ and \u00e9t\u00e9 \U0001f4e6'
SQL = "SELECT %s::text = %s, %s::text IS NULL, %s::timestamptz, %s::text"
AT = datetime(2026, 12, 4, 15, 4, 5, 123456, tzinfo=UTC)
COLUMNS = (libpq.BOOLEAN, libpq.BOOLEAN, datetime.fromisoformat, libpq.TEXT)


@pytest.mark.django_db
def test_the_row_is_the_cursors() -> None:
    params = [TEXT, TEXT, None, AT, TEXT]
    row = libpq.call_row(connection, SQL, params, COLUMNS)
    assert row is not None
    assert row[:2] == (True, True) and row[3] == TEXT
    assert row[2] == AT  # the server's text of the instant, in the session's time zone
    assert row == tuple(driver.fetch(connection, SQL, params)[0])
    assert libpq.call_row(connection, "SELECT %s WHERE false", ["x"], [libpq.TEXT]) is None
    assert libpq.call_row(connection, "SELECT NULL::text", [], [libpq.TEXT]) == (None,)


@pytest.mark.django_db(transaction=True)  # autocommit: the call goes to libpq itself
def test_integers_booleans_and_json_fields_values_are_sent_as_the_cursor_sends_them() -> None:
    document = {"quote": TEXT, "n": [1, 2.5, None, True], "percent": "%s %"}
    prepared = JSONField().get_db_prep_save(document, connection)  # Django's Jsonb
    sql = "SELECT %s::int, %s::bigint, %s::boolean, %s::boolean, %s::jsonb, %s::jsonb::text"
    params = [-7, 2**40, True, False, prepared, prepared]
    columns = (int, int, libpq.BOOLEAN, libpq.BOOLEAN, libpq.TEXT, libpq.TEXT)
    row = libpq.call_row(connection, sql, params, columns)
    assert row is not None and row[:4] == (-7, 2**40, True, False)
    assert json.loads(row[4]) == document
    assert row == tuple(driver.fetch(connection, sql, params)[0])


@pytest.mark.django_db
def test_statements_django_sees_go_through_its_cursor() -> None:
    with CaptureQueriesContext(connection) as captured:
        assert libpq.call_row(connection, "SELECT %s::text", ["a"], [libpq.TEXT]) == ("a",)
    assert len(captured) == 1  # logged: the cursor's way


@pytest.mark.django_db(transaction=True)  # Django's own transactions, no test transaction
def test_a_call_in_a_transaction_not_yet_begun_runs_inside_it() -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS dw_test_libpq (n int)")
        cursor.execute("TRUNCATE dw_test_libpq")
    try:
        # psycopg sends BEGIN before the transaction's first statement: a call sent to libpq
        # first would commit on its own and survive the rollback.
        with pytest.raises(RuntimeError), transaction.atomic():
            row = libpq.call_row(
                connection, "INSERT INTO dw_test_libpq VALUES (1) RETURNING 'in'", [], [str]
            )
            assert row == ("in",)
            libpq.call_row(  # and once begun, inside it too
                connection, "INSERT INTO dw_test_libpq VALUES (2) RETURNING 'in'", [], [str]
            )
            raise RuntimeError("roll back")
        assert libpq.call_row(connection, "SELECT count(*) FROM dw_test_libpq", [], [int]) == (0,)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE dw_test_libpq")


@pytest.mark.django_db(transaction=True)
def test_errors_are_djangos_and_nothing_is_sent_with_a_nul() -> None:
    with pytest.raises(DatabaseError) as raised:
        libpq.call_row(connection, "SELECT x FROM dw_no_such_table", [], [])
    assert type(raised.value).__module__ == "django.db.utils"
    with pytest.raises(DataError):  # libpq would send the text cut at the NUL
        libpq.call_row(connection, "SELECT %s::text", ["a\x00b"], [libpq.TEXT])
    with pytest.raises(TypeError, match="must be text, None, a datetime"):
        libpq.call_row(connection, "SELECT %s::text", [7.5], [libpq.TEXT])
    with pytest.raises(ValueError, match="other than its placeholders"):
        libpq.call_row(connection, "SELECT 'a%b'", [], [libpq.TEXT])
    assert libpq.call_row(connection, "SELECT %s::text", ["on"], [libpq.TEXT]) == ("on",)


def own_pid() -> int:
    return int(driver.fetch(connection, "SELECT pg_backend_pid()", [])[0][0])


def from_another_connection(sql: str, pid: int, delay: float = 0.0) -> threading.Thread:
    def act() -> None:
        try:
            time.sleep(delay)
            with connections["default"].cursor() as cursor:
                cursor.execute(sql, [pid])
        finally:
            connections.close_all()

    thread = threading.Thread(target=act)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_call_is_djangos_operational_error_and_the_connection_goes_on() -> None:
    pid = own_pid()
    canceller = from_another_connection("SELECT pg_cancel_backend(%s)", pid, delay=0.5)
    try:
        with pytest.raises(OperationalError, match="cancel"):
            libpq.call_row(connection, "SELECT pg_sleep(%s)::text", ["30"], [libpq.TEXT])
    finally:
        canceller.join()
    assert libpq.call_row(connection, "SELECT %s::text", ["after"], [libpq.TEXT]) == ("after",)
    assert own_pid() == pid


@pytest.mark.django_db(transaction=True)
def test_a_killed_connection_is_djangos_error_then_replaced() -> None:
    pid = own_pid()
    from_another_connection("SELECT pg_terminate_backend(%s)", pid).join()
    with pytest.raises(OperationalError):
        libpq.call_row(connection, "SELECT %s::text", ["lost"], [libpq.TEXT])
    # Django's handling of the error marked the connection unusable, as a cursor's would
    connection.close_if_unusable_or_obsolete()
    assert connection.connection is None
    assert libpq.call_row(connection, "SELECT %s::text", ["new"], [libpq.TEXT]) == ("new",)
    assert own_pid() != pid


def test_placeholders_are_numbered_in_order() -> None:
    assert libpq._numbered("SELECT f(%s, %s, %s::jsonb)") == b"SELECT f($1, $2, $3::jsonb)"


def prepared_names() -> set[str]:
    found = driver.fetch(connection, "SELECT name FROM pg_prepared_statements", [])
    return {row[0] for row in found if row[0].startswith("dw_")}


@pytest.mark.django_db(transaction=True)
def test_calls_are_prepared_once_where_the_connection_takes_prepared_statements() -> None:
    connection.ensure_connection()
    raw = connection.connection
    threshold = raw.prepare_threshold
    try:
        raw.prepare_threshold = None  # Django's default: no statement prepared
        assert libpq.call_row(connection, "SELECT %s::text", ["a"], [libpq.TEXT]) == ("a",)
        assert prepared_names() == set()
        raw.prepare_threshold = 5  # DB_PREPARED=1, the recommended set-up
        for text in ("b", "c"):
            assert libpq.call_row(connection, "SELECT %s::text", [text], [libpq.TEXT]) == (text,)
        (name,) = prepared_names()
        # psycopg deallocates every statement after a ROLLBACK while it holds its own: the
        # next call prepares its statement again rather than fail
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
        assert prepared_names() == set()
        assert libpq.call_row(connection, "SELECT %s::text", ["d"], [libpq.TEXT]) == ("d",)
        assert prepared_names() == {name}
        # inside a transaction a call is not prepared: were its statement gone, its failure
        # would abort the transaction
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
        with pytest.raises(RuntimeError), transaction.atomic():
            driver.fetch(connection, "SELECT 1", [])
            assert libpq.call_row(connection, "SELECT %s::text", ["e"], [libpq.TEXT]) == ("e",)
            assert prepared_names() == set()
            raise RuntimeError("roll back")
        assert libpq.call_row(connection, "SELECT %s::text", ["f"], [libpq.TEXT]) == ("f",)
        assert prepared_names() == {name}
        with pytest.raises(DatabaseError):  # a statement that cannot be prepared: its error
            libpq.call_row(connection, "SELECT x FROM dw_no_such_table", [], [])
        assert prepared_names() == {name}
    finally:
        raw.prepare_threshold = threshold
        connection.close()  # the next test's connection starts with nothing prepared


def traced(path: Path, calls: Callable[[], object]) -> str:
    """The protocol messages libpq sends and receives on Django's connection during `calls`."""
    raw = connection.connection
    with path.open("w") as trace:
        raw.pgconn.trace(trace.fileno())
        raw.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            calls()
        finally:
            raw.pgconn.untrace()
    return path.read_text()


@pytest.mark.django_db(transaction=True)
def test_the_first_call_prepares_its_statement_in_its_own_round_trip(tmp_path: Path) -> None:
    sql = "SELECT %s::text || %s::text, %s::jsonb ->> 'k', %s::text IS NULL"
    document = JSONField().get_db_prep_save({"k": TEXT}, connection)
    connection.ensure_connection()
    try:

        def calls() -> None:
            for text in ("a", TEXT):
                row = libpq.call_row(
                    connection, sql, [text, "'", document, None], [libpq.TEXT] * 3, prepare=True
                )
                assert row == (text + "'", TEXT, "t")

        trace = traced(tmp_path / "trace", calls)
        # one round trip a call: the first prepares and executes its statement in one query,
        # one transaction on the server; the second executes it
        assert trace.count("ReadyForQuery") == 2, trace
        assert "\tParse\t" not in trace, trace
        assert prepared_names() == {libpq._name(sql).decode()}
        # a statement that fails at its first call: the error, and the next call runs it
        with pytest.raises(DataError):
            libpq.call_row(connection, "SELECT 1 / %s::int", ["0"], [int], prepare=True)
        assert libpq.call_row(connection, "SELECT 1 / %s::int", ["1"], [int], prepare=True) == (1,)
        # a statement without parameters: EXECUTE without arguments
        assert libpq.call_row(connection, "SELECT 2", [], [int], prepare=True) == (2,)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_the_call_again() -> None:
    connection.ensure_connection()
    connection.connection.prepare_threshold = 5
    assert libpq.call_row(connection, "SELECT %s::text", ["f"], [libpq.TEXT]) == ("f",)
    connection.close()
    connection.ensure_connection()
    connection.connection.prepare_threshold = 5
    assert libpq.call_row(connection, "SELECT %s::text", ["g"], [libpq.TEXT]) == ("g",)
    assert len(prepared_names()) == 1
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_call_asked_to_be_prepared_is_on_djangos_default_connection() -> None:
    connection.ensure_connection()
    connection.connection.prepare_threshold = None  # Django's default (DB_PREPARED=1 sets one)
    try:
        assert libpq.call_row(connection, "SELECT %s::text", ["a"], [libpq.TEXT]) == ("a",)
        assert prepared_names() == set()
        for text in ("b", "c"):
            row = libpq.call_row(connection, "SELECT %s::text", [text], [libpq.TEXT], prepare=True)
            assert row == (text,)
        assert prepared_names() == {libpq._name("SELECT %s::text").decode()}
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_statement_of_its_name_left_in_the_session_is_the_same_and_used() -> None:
    # A pooler's session may hold it from an earlier client (PgBouncer without DISCARD ALL):
    # the name is the hash of the text, so the statement there is this one.
    sql = "SELECT %s::text || 'x'"
    connection.ensure_connection()
    try:
        raw = connection.connection
        assert raw.pgconn.prepare(libpq._name(sql), libpq._numbered(sql)).status == (
            libpq.pq.ExecStatus.COMMAND_OK
        )
        assert libpq.call_row(connection, sql, ["a"], [libpq.TEXT], prepare=True) == ("ax",)
        assert libpq.call_row(connection, sql, ["b"], [libpq.TEXT], prepare=True) == ("bx",)
        assert prepared_names() == {libpq._name(sql).decode()}
    finally:
        connection.close()


@pytest.fixture
def pooler(tmp_path: Path) -> Iterator[int]:
    """A PgBouncer in transaction pooling in front of the test server, two server sessions
    taken in turn: each transaction of a client may run in the other session."""
    binary = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("PgBouncer is not installed: .ci/run installs Debian's pgbouncer")
        pytest.skip("PgBouncer is not installed (apt-get install pgbouncer)")
    settings = connection.settings_dict
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "pgbouncer.ini"
    config.write_text(
        "[databases]\n"
        f"* = host={settings['HOST'] or '127.0.0.1'} port={settings['PORT'] or 5432} "
        f"user={settings['USER']} password={settings['PASSWORD']}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        "auth_type = any\npool_mode = transaction\nserver_round_robin = 1\n"
        "default_pool_size = 2\nmin_pool_size = 2\n"
    )
    config.chmod(0o644)  # run as root, PgBouncer reads it as another user
    command = [binary, str(config)]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        command[1:1] = ["-u", "postgres"]
    log = tmp_path / "pgbouncer.log"
    with log.open("wb") as output:  # written by this process: PgBouncer's user cannot
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PgBouncer did not start: {log.read_text()!r}")
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.django_db(transaction=True)
def test_behind_a_pooler_that_changes_sessions_the_calls_run_unprepared(pooler: int) -> None:
    default = connections["default"]
    pooled = type(default)({**default.settings_dict, "PORT": pooler}, alias="pooled")
    sql = "SELECT %s::text, pg_backend_pid()::text"
    try:
        # a second server session: one client's transaction holds the first meanwhile
        with psycopg.connect(**pooled.get_connection_params()) as holder:
            holder.execute("SELECT 1")  # BEGIN and its statement: the session is the holder's
            pooled.ensure_connection()
            driver.fetch(pooled, "SELECT 1", [])
        sessions = set()
        for n in range(12):
            row = libpq.call_row(pooled, sql, [str(n)], [libpq.TEXT, libpq.TEXT], prepare=True)
            assert row is not None and row[0] == str(n)
            sessions.add(row[1])
        assert len(sessions) == 2  # the calls went to both sessions, and each answered
        # the connection noticed and prepares nothing more: no round trip lost on each call
        raw, names = libpq._local.prepared["pooled"]
        assert raw is pooled.connection and libpq._UNPREPARABLE in names
    finally:
        pooled.close()
