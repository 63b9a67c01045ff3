"""The shop's JSON endpoints (the tutorial's controllers) and a small index page."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

import django_workflows
from django_workflows.streams import sse_response

from . import services
from .models import Order
from .workflows import fulfilment_id

MAX_ID_LENGTH = 255


class BadRequest(Exception):
    """The request body is not what the endpoint takes (HTTP 400)."""

    status_code = 400


def error_response(message: str, status: int) -> JsonResponse:
    """An error in the tutorial's shape: `{"message", "error", "statusCode"}`."""
    body = {"message": message, "error": HTTPStatus(status).phrase, "statusCode": status}
    return JsonResponse(body, status=status)


def json_body(request: HttpRequest) -> dict[str, Any]:
    """The request's JSON object. Raises `BadRequest`."""
    try:
        body = json.loads(request.body or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(f"The request body is not valid JSON: {error}.")
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def _string(body: dict[str, Any], field: str, *, where: str = "", required: bool = True) -> Any:
    value = body.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{where}{field} must be a non-empty string.")
    if len(value) > MAX_ID_LENGTH:
        raise BadRequest(f"{where}{field} must be at most {MAX_ID_LENGTH} characters long.")
    return value


def _integer(body: dict[str, Any], field: str, *, where: str, minimum: int) -> int:
    value = body.get(field)
    # bool is an int in Python, but true is no quantity.
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise BadRequest(f"{where}{field} must be an integer of at least {minimum}.")
    return value


def parse_order(body: dict[str, Any]) -> dict[str, Any]:
    """Validate the body of `POST /orders`. Raises `BadRequest` naming the field."""
    user_id = _string(body, "user_id")
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise BadRequest("items must be a non-empty list.")
    parsed = []
    for index, item in enumerate(items):
        where = f"items[{index}]."
        if not isinstance(item, dict):
            raise BadRequest(f"items[{index}] must be an object.")
        parsed.append(
            {
                "productId": _string(item, "productId", where=where),
                "quantity": _integer(item, "quantity", where=where, minimum=1),
                "price": _integer(item, "price", where=where, minimum=0),
            }
        )
    shipping = body.get("shipping", Order.Shipping.STANDARD)
    if shipping not in Order.Shipping.values:
        choices = " or ".join(repr(value) for value in Order.Shipping.values)
        raise BadRequest(f"shipping must be {choices}.")
    return {"user_id": user_id, "items": parsed, "shipping": str(shipping)}


def handle_errors(view: Any) -> Any:
    """Answer the shop's and the workflows' errors with their HTTP status, as JSON."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except (
            BadRequest,
            services.OrderNotFound,
            services.OrderConflict,
            django_workflows.WorkflowError,
        ) as error:
            status = getattr(error, "status_code", None)
            if status is None:
                raise
            return error_response(str(error), status)

    return wrapper


def iso(moment: datetime | None) -> str | None:
    """A time as the tutorial prints it: UTC, milliseconds and `Z`."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@csrf_exempt
@require_POST
@handle_errors
def place_order(request: HttpRequest) -> HttpResponse:
    """`POST /orders`: save the order, which starts its fulfilment in the same transaction."""
    order, fulfilment = services.place_order(**parse_order(json_body(request)))
    body = order.as_dict()
    body["fulfilment"] = {
        "id": fulfilment.id,
        "workflow": fulfilment.workflow,
        "version": fulfilment.version,
        "status": str(fulfilment.status),
    }
    return JsonResponse(body, status=201)


@require_GET
@handle_errors
def fulfilment(request: HttpRequest, order_id: str) -> HttpResponse:
    """`GET /orders/<id>/fulfilment`: where the order's fulfilment stands."""
    instance = django_workflows.get_status(fulfilment_id(order_id), journal=True)
    if instance is None:
        return error_response(f"Order {order_id} not found.", 404)
    # A small view for customers: the raw instance includes the input and lease details.
    return JsonResponse(
        {
            "status": str(instance.status),
            "stage": instance.custom_status,
            "waitingFor": [wait.signal for wait in instance.waits],
            "wakeAt": iso(instance.wake_at),
            # Not the `$stream:` entries of the order page's status lines.
            "steps": {
                entry.name: str(entry.status)
                for entry in instance.journal or []
                if not entry.name.startswith("$stream:")
            },
            "error": instance.error["message"] if instance.error else None,
        }
    )


@csrf_exempt
@require_POST
@handle_errors
def cancel(request: HttpRequest, order_id: str) -> HttpResponse:
    """`POST /orders/<id>/cancel`: customer support cancels an order that isn't delivered yet."""
    # Customer support only: protect it with your staff login in a real shop.
    body = json_body(request) if request.body else {}
    reason = _string(body, "reason", required=False)
    result = services.cancel_order(order_id, reason)
    return JsonResponse({"accepted": result.accepted}, status=202)


@csrf_exempt
@require_POST
@handle_errors
def carrier_webhook(request: HttpRequest) -> HttpResponse:
    """`POST /webhooks/carrier`: the carrier reports a delivery or a return; the shop saves it,
    and its `carrier_reported` signal wakes the order's fulfilment."""
    # A real shop verifies the carrier's signature header before trusting the body.
    body = json_body(request)
    kind = _string(body, "type")
    handlers = {
        "shipment.delivered": services.mark_delivered,
        "shipment.returned": services.mark_returned,
    }
    if kind in handlers:
        event = {
            "type": kind,
            "reference": _string(body, "reference"),
            "trackingNumber": _string(body, "trackingNumber"),
            "occurredAt": _string(body, "occurredAt"),
        }
        handlers[kind](event)
    return JsonResponse({"received": True})


@require_GET
def order_page(request: HttpRequest, order_id: str) -> HttpResponse:
    """`GET /orders/<id>`: the order, its fulfilment's status lines streaming in live."""
    order = get_object_or_404(Order, pk=order_id)
    return render(request, "shop/order.html", {"order": order})


@require_GET
def order_events(request: HttpRequest, order_id: str) -> HttpResponse:
    """`GET /orders/<id>/events`: the status lines as Server-Sent Events, for the order page's
    EventSource. A real shop checks the order is the customer's first."""
    order = get_object_or_404(Order, pk=order_id)
    return sse_response(request, fulfilment_id(order.pk), "progress")


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    """The recent orders with where their fulfilment stands, and how to play with the shop."""
    orders = []
    for order in Order.objects.all()[:20]:
        instance = django_workflows.get_status(fulfilment_id(order.id))
        orders.append({"order": order, "fulfilment": instance})
    return render(request, "shop/index.html", {"orders": orders})
