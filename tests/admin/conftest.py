from __future__ import annotations

import base64

import pytest
from django.contrib.auth.models import Permission, User

import django_workflows as wf
from tests.testapp.world import world as the_world


def order(id: str, product: str = "kibble") -> dict:
    """An order like the tutorial's."""
    return {
        "id": id,
        "user_id": "u_42",
        "items": [{"product": product, "quantity": 1}],
        "total": 2499,
    }


@pytest.fixture
def world():
    the_world.reset()
    return the_world


@pytest.fixture
def instances(db, workflow_clock, world):
    """One instance of each kind support meets: failed, completed, suspended, and failed after
    its compensations ran. Returns their ids."""
    wf.start("flaky", {"user_id": "u_declined"}, id="declined")
    wf.start("flaky", {}, id="paid")
    wf.start("order-fulfilment", order("waiting"), id="order-waiting")
    wf.start("order-fulfilment", order("no-stock", product="unicorn"), id="order-no-stock")
    wf.drain()
    return {
        "failed": "declined",
        "completed": "paid",
        "suspended": "order-waiting",
        "compensated": "order-no-stock",
    }


def returned_order(clock, world) -> str:
    """An order the carrier returned after two days, whose stock release then gave up:
    `compensation_failed`, with a journal of steps, a long wait and failed compensations."""
    id = "order-3f9a1c"
    world.failures["charge"] = 1  # one retry, two seconds later
    wf.start("order-fulfilment", order("3f9a1c"), id=id)
    wf.drain()
    clock.advance("2s")
    wf.drain()
    clock.advance("53h")
    wf.signal("shipment.returned", {"reason": "refused by the customer"}, key="3f9a1c")
    world.failures["release"] = 3  # every attempt of the release
    for _ in range(4):
        wf.drain()
        clock.advance("1m")
    assert wf.get_status(id).status == "compensation_failed"
    return id


def staff_user(username: str, *codenames: str, password: str | None = None) -> User:
    """A staff user with view permission on instances and the given permissions."""
    user = User.objects.create_user(username, password=password, is_staff=True)
    wanted = ["view_workflowinstance", *codenames]
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_workflows", codename__in=wanted)
    )
    return user


@pytest.fixture
def support_client(client, db):
    """A staff user who may view and cancel instances, but not retry, terminate or delete them."""
    client.force_login(staff_user("support", "cancel_workflowinstance"))
    return client


KEY_A = base64.b64encode(b"A" * 32).decode()
KEY_B = base64.b64encode(b"B" * 32).decode()


class Codecs:
    """Switch the CODEC setting, as a deployment would: `write()` lists key 2026-09, `lose_key()`
    then lists only 2027-03, so what was written before cannot be read."""

    def __init__(self, settings):
        self.settings = settings

    def _use(self, key_id: str, key: str) -> None:
        from django_workflows.codecs import AesGcmPayloadCodec

        self.settings.DJANGO_WORKFLOWS = {
            **getattr(self.settings, "DJANGO_WORKFLOWS", {}),
            "CODEC": AesGcmPayloadCodec(keys={key_id: key}, current=key_id),
        }

    def write(self) -> None:
        self._use("2026-09", KEY_A)

    def lose_key(self) -> None:
        self._use("2027-03", KEY_B)


@pytest.fixture
def codecs(settings):
    return Codecs(settings)
