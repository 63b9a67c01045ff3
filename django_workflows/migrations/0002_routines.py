# The lease holder's most frequent writes as the database's own routines, from the frozen files
# named here (store/backends/routines.py): on PostgreSQL the functions dw_journal_write_v1
# (journal entries alone), dw_final_write_v1 (an instance's last write) and
# dw_final_write_ride_v1 (a last write that also leases the next due instance to the same
# worker), each planned once per session; on MySQL and MariaDB the stored procedures
# dw_journal_write_v1 and dw_final_write_v1. Nothing on SQLite. A changed routine is a new file
# and a new migration: this one's files never change.

from django.db import migrations

from django_workflows.store.backends import routines

ROUTINES = (
    'postgresql/sql/dw_journal_write_v1.sql',
    'postgresql/sql/dw_final_write_v1.sql',
    'postgresql/sql/dw_final_write_ride_v1.sql',
    'mysql/sql/dw_journal_write_v1.sql',
    'mysql/sql/dw_final_write_v1.sql',
)


def create_routines(apps, schema_editor):
    routines.create(schema_editor, ROUTINES)


def drop_routines(apps, schema_editor):
    routines.drop(schema_editor, ROUTINES)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0001_initial'),
    ]

    operations = [
        # Not in a transaction of its own: MySQL commits at every CREATE or DROP PROCEDURE, and
        # Django refuses DDL inside a transaction on databases that cannot roll it back.
        migrations.RunPython(create_routines, drop_routines, atomic=False),
    ]
