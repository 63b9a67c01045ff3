# The parked instances (store/parking.py): a column, the claim indexes rebuilt without them,
# and an index of them by workflow and key.

import django_workflows.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0012_live_key_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='workflowinstance',
            name='parked',
            field=models.BooleanField(default=False),
        ),
        migrations.RemoveIndex(
            model_name='workflowinstance',
            name='dw_instance_due',
        ),
        migrations.RemoveIndex(
            model_name='workflowinstance',
            name='dw_instance_queue_due',
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.models.DueIndex(fields=['priority', 'lease_until', 'wake_at', 'created_at'], lease='free', name='dw_instance_due', unparked='predicate'),
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.models.DueIndex(fields=['queue', 'priority', 'lease_until', 'wake_at', 'created_at'], lease='free', name='dw_instance_queue_due', unparked='column'),
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.models.ParkedIndex(fields=['workflow', 'concurrency_key', 'parked'], name='dw_instance_parked'),
        ),
    ]
