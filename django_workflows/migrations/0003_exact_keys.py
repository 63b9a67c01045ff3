"""Ids, names and keys compare exactly on MySQL and MariaDB: their columns move from the PAD
SPACE `utf8mb4_bin` (or whatever collation they have) onto `utf8mb4_nopad_bin` on MariaDB and
`utf8mb4_0900_bin` on MySQL. Nothing changes on PostgreSQL and SQLite, nor in the models' state:
KeyField sets the collation on the column where it is created."""

from django.db import migrations


def make_keys_exact(apps, schema_editor):
    from django_workflows.store.backends import backend

    models = apps.get_app_config("django_workflows").get_models()
    backend(schema_editor.connection.alias).move_key_columns(schema_editor, models)


class Migration(migrations.Migration):
    dependencies = [
        ("django_workflows", "0002_instance_awaited"),
    ]

    operations = [
        # Not atomic: ALTER TABLE commits on MySQL, and Django refuses DDL in a transaction
        # there. The old collation compared exactly but for trailing spaces: nothing to undo.
        migrations.RunPython(make_keys_exact, migrations.RunPython.noop, atomic=False),
    ]
