# Fewer index entries per journal entry, tag, attribute and instance row version: the instance
# foreign keys of the journal, the tags and the attributes lose the index of their own (each
# table's unique constraint starts with the instance, and serves its lookups), and PostgreSQL's
# pattern-operator ("_like") indexes of the app's ids and keys go: the app never looks them up
# with LIKE. Dropped by name (indexes.DropColumnIndexes), not by an AlterField, which SQLite
# would carry out by copying the whole table.

import django.db.models.deletion
import django_workflows.indexes
from django.db import migrations, models


def _own_index(model_name, related_name):
    return migrations.SeparateDatabaseAndState(
        state_operations=[
            migrations.AlterField(
                model_name=model_name,
                name='instance',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name=related_name, to='django_workflows.workflowinstance'),
            ),
        ],
        database_operations=[
            django_workflows.indexes.DropColumnIndexes(model_name, 'instance', ('', '_like')),
        ],
    )


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0014_instances_without_parent_schedule_subject'),
    ]

    operations = [
        _own_index('journalentry', 'entries'),
        _own_index('instancetag', 'tags'),
        _own_index('instanceattribute', 'attributes'),
        django_workflows.indexes.DropColumnIndexes('workflowinstance', 'id', ('_like',)),
        django_workflows.indexes.DropColumnIndexes('wait', 'instance', ('_like',)),
        django_workflows.indexes.DropColumnIndexes('workflowschedule', 'id', ('_like',)),
        django_workflows.indexes.DropColumnIndexes('workerprocess', 'id', ('_like',)),
        django_workflows.indexes.DropColumnIndexes('storelock', 'name', ('_like',)),
    ]
