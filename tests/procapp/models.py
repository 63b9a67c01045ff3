"""What the multi-process tests' workflows write: shared by every process, like a real world."""

from django.db import models


class Charge(models.Model):
    """A charge, stored once per idempotency key, as a payment provider does."""

    key = models.CharField(max_length=191, unique=True)
    order_id = models.CharField(max_length=64)
    requests = models.IntegerField(default=1)

    def __str__(self) -> str:
        return self.key


class StepRun(models.Model):
    """One attempt of a step in one process: when it started and when it ended."""

    instance_id = models.CharField(max_length=191)
    step = models.CharField(max_length=64)
    pid = models.IntegerField()
    started = models.FloatField()
    finished = models.FloatField(null=True)

    def __str__(self) -> str:
        return f"{self.instance_id} {self.step} in {self.pid}"


class Signup(models.Model):
    """A row a web process saves, whose post_save starts the welcome workflow (start_on)."""

    email = models.CharField(max_length=191, unique=True)

    def __str__(self) -> str:
        return self.email
