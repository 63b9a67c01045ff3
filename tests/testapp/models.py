"""Models the tests' workflows write to (a `Ledger`, for example), and workflows' subjects;
no migrations needed (the test database is built from the models)."""

from django.db import models


class Execution(models.Model):
    """One run of a recorded step (the race tests): which instance, in which thread, which run."""

    instance_id = models.CharField(max_length=191)
    step = models.CharField(max_length=100, default="")
    thread = models.CharField(max_length=100)
    run = models.IntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "testapp"

    def __str__(self) -> str:
        return f"{self.instance_id} {self.step} in {self.thread} (run {self.run})"


class Ledger(models.Model):
    """An application row written in the same transaction as a start() (an order, say)."""

    order_id = models.CharField(max_length=64, unique=True)
    total = models.IntegerField()

    def __str__(self) -> str:
        return f"order {self.order_id}"


class Purchase(models.Model):
    """A business row whose post_save starts a workflow in the start_on tests."""

    reference = models.CharField(max_length=300, unique=True)
    total = models.IntegerField(default=0)
    express = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"purchase {self.reference}"


class Order(models.Model):
    """A business object keyed by a string, as the shop's orders are: a workflow's subject."""

    # Longer than an instance's subject_id (255), so that a test can try a key that cannot fit.
    id = models.CharField(primary_key=True, max_length=300)
    customer = models.CharField(max_length=64, default="u_42")

    def __str__(self) -> str:
        return f"Order {self.id}"


class ProxyOrder(Order):
    """The same rows as Order: its instances are Order's."""

    class Meta:
        proxy = True
