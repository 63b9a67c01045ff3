# The lease holder's two most frequent writes, journal entries alone and an instance's last, as
# functions of the database's own where the store has them (PostgreSQL's dw_journal_write and
# dw_final_write, store/backends/postgresql/writes.py): their statements are then planned once
# per session rather than at every write. Nothing on the other databases.

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
