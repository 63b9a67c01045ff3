import json, pytest
import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.testapp.world import world

@pytest.mark.django_db
def test_dump(workflow_clock):
    world.reset()
    wf.start("flaky", {"user_id": "u_declined"}, id="declined"); wf.drain()
    o = {"id": "o1", "user_id": "u_42", "items": [{"product": "k", "quantity": 1}], "total": 2499}
    wf.start("order-fulfilment", o, id="order-o1"); wf.drain()
    workflow_clock.advance("4d"); wf.drain()
    wf.start("order-fulfilment", {**o, "id": "o2"}, id="order-o2"); wf.drain()
    wf.signal("shipment.delivered", {"trackingNumber": "T1"}, key="o2"); wf.drain()
    workflow_clock.advance("2d"); wf.drain()
    for i in WorkflowInstance.objects.all():
        print(i.id, i.status, i.error, i.custom_status, i.wake_at, i.runs)
        for e in i.entries.all():
            print("   ", e.name, json.dumps(e.document))
