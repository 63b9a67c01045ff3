# The lease holder's most frequent write, journal entries alone, as a function of the database's
# own where the store has one (PostgreSQL's dw_journal_write, store/backends/postgresql_journal.py):
# its statement is then planned once per session rather than at every step. Nothing elsewhere.

from django.db import migrations

from django_workflows.store.backends import backend


def create_functions(apps, schema_editor):
    backend(schema_editor.connection.alias).create_functions(schema_editor)


def drop_functions(apps, schema_editor):
    backend(schema_editor.connection.alias).drop_functions(schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0015_no_redundant_key_indexes'),
    ]

    operations = [
        migrations.RunPython(create_functions, drop_functions),
    ]
