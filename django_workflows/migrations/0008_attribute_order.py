"""InstanceAttribute.created_at, the instance's own; the index that reads the instances with an
attribute in the instance list's order; and the value indexes covering what a page needs, on
PostgreSQL (list_instances(attributes=...) on a big table)."""

from typing import Any

from django.db import migrations, models
from django.db.models import OuterRef, Subquery

import django_workflows.models


def copy_created_at(apps: Any, schema_editor: Any) -> None:
    """Give the attributes written before this migration their instance's created_at."""
    alias = schema_editor.connection.alias
    attributes = apps.get_model("django_workflows", "InstanceAttribute")
    instances = apps.get_model("django_workflows", "WorkflowInstance")
    created = instances.objects.using(alias).filter(pk=OuterRef("instance_id"))
    attributes.objects.using(alias).update(created_at=Subquery(created.values("created_at")[:1]))


class Migration(migrations.Migration):
    dependencies = [
        ("django_workflows", "0007_queues_workers"),
    ]

    operations = [
        migrations.AddField(
            model_name="instanceattribute",
            name="created_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunPython(copy_created_at, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="instanceattribute",
            name="created_at",
            field=models.DateTimeField(),
        ),
        *(
            operation
            for column in ("text", "number", "moment")
            for operation in (
                migrations.RemoveIndex(
                    model_name="instanceattribute", name=f"dw_attribute_{column}"
                ),
                migrations.AddIndex(
                    model_name="instanceattribute",
                    index=django_workflows.models.CoveringIndex(
                        fields=["name", column],
                        name=f"dw_attribute_{column}",
                        covering=("kind", "created_at", "instance"),
                    ),
                ),
            )
        ),
        migrations.AddIndex(
            model_name="instanceattribute",
            index=django_workflows.models.CoveringIndex(
                fields=["name", "created_at", "instance"],
                name="dw_attribute_order",
                covering=("kind", "text", "number", "moment"),
            ),
        ),
    ]
