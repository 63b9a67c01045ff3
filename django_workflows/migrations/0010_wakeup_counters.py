"""The wake-up counters: how a worker on SQLite, MySQL or MariaDB hears of a start or signal
committed in another process within WORKER['WAKEUP_INTERVAL'] rather than its poll."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_workflows", "0009_claims_pass_over_leases"),
    ]

    operations = [
        migrations.CreateModel(
            name="WakeupCounter",
            fields=[
                ("shard", models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                ("count", models.BigIntegerField(default=0)),
            ],
            options={"verbose_name": "wake-up counter"},
        ),
    ]
