# The claim indexes end with the id, as the claim's order does (priority, wake time, created,
# id). With created_at last, PostgreSQL could read the first rows of a claim in index order only
# by an incremental sort, which it planned only when its statistics knew how many instances
# were due; while they said few (a new table, a burst of starts since the last ANALYZE), every
# claim read every due row and sorted them. Where the indexes are partial (PostgreSQL, SQLite)
# they also lose lease_until, NULL in every row they hold (indexes.DueIndex): SQLite read the
# claim's order from the index only up to that column, and sorted every due row for the rest.
# On MySQL and MariaDB the indexes held the id already (InnoDB ends each secondary index with
# the primary key), and keep lease_until, which keeps the leased rows out of a claim's range:
# rebuilt the same. Each index is built anew, reading the whole table once while writes to it
# wait (the indexes hold the due instances only, so they are small; the read is of every
# instance kept).

import django_workflows.indexes
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0017_write_procedures'),
    ]

    operations = [
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
            index=django_workflows.indexes.DueIndex(fields=['priority', 'lease_until', 'wake_at', 'created_at', 'id'], lease='free', name='dw_instance_due', unparked='predicate'),
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.indexes.DueIndex(fields=['queue', 'priority', 'lease_until', 'wake_at', 'created_at', 'id'], lease='free', name='dw_instance_queue_due', unparked='column'),
        ),
    ]
