# The lease holder's two most frequent writes, journal entries alone and an instance's last, as
# stored procedures where the store has them (MySQL's and MariaDB's dw_journal_write and
# dw_final_write, store/backends/mysql/procedures.py): the row's flags read once, the entries
# upserted in one statement, the statements parsed once per session. Nothing on the other
# databases.

from django.db import migrations

from django_workflows.store.backends import backend


def create_procedures(apps, schema_editor):
    backend(schema_editor.connection.alias).create_procedures(schema_editor)


def drop_procedures(apps, schema_editor):
    backend(schema_editor.connection.alias).drop_procedures(schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0016_write_functions'),
    ]

    operations = [
        # Not in a transaction: MySQL commits at every CREATE or DROP PROCEDURE, and Django
        # refuses DDL inside a transaction on databases that cannot roll it back.
        migrations.RunPython(create_procedures, drop_procedures, atomic=False),
    ]
