"""`has_headers`: start() stored STEP_MIDDLEWARE headers (the journal entry `$headers`) with the
instance, so the claim reads a first execution's journal only for the instances that have them.
The instances started before are marked from their `$headers` entries."""

from django.db import migrations, models
from django.db.models import Exists, OuterRef


def mark_instances_with_headers(apps, schema_editor):
    alias = schema_editor.connection.alias
    instances = apps.get_model("django_workflows", "WorkflowInstance")
    entries = apps.get_model("django_workflows", "JournalEntry")
    headers = entries.objects.using(alias).filter(instance_id=OuterRef("pk"), name="$headers")
    instances.objects.using(alias).filter(Exists(headers)).update(has_headers=True)


class Migration(migrations.Migration):
    dependencies = [
        ("django_workflows", "0010_wakeup_counters"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflowinstance",
            name="has_headers",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(mark_instances_with_headers, migrations.RunPython.noop),
    ]
