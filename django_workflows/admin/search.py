"""The changelists' search, bounded: a search longer than any field it looks in is not run.

Django's admin runs `?q=` as a LIKE per word and field, whatever its length. A megabyte of it
makes SQLite fail the query ("LIKE or GLOB pattern too complex", an HTTP 500), the other
databases scan for a text no row can hold, and every link on the page would repeat it.
"""

from __future__ import annotations

from django.contrib.admin.views.main import SEARCH_VAR
from django.http import HttpRequest

from ..models import KEY_LENGTH

# The longest searched field (ids, names and keys are at most this long): a longer search can
# match nothing.
MAX_SEARCH = KEY_LENGTH


def drop_long_search(request: HttpRequest) -> str | None:
    """Take a search longer than MAX_SEARCH out of the request's query string, so the page lists
    the rows unsearched and its links leave it out; return the message that says so, or None
    when the search (if any) is short enough to run."""
    term = request.GET.get(SEARCH_VAR, "")
    if len(term) <= MAX_SEARCH:
        return None
    query = request.GET.copy()
    del query[SEARCH_VAR]
    query._mutable = False
    request.GET = query  # type: ignore[assignment]  # immutable again, as Django made it
    return (
        f"The search is {len(term)} characters long: no field it looks in holds more than "
        f"{MAX_SEARCH}, so it was not run."
    )
