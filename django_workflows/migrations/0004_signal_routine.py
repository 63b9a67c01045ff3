# A signal outside a transaction as the database's own function, from the frozen file named here
# (store/backends/routines.py): on PostgreSQL dw_signal_v1 (under the signal lock, a signal's
# INSERT unless its dedupe id was sent, the wake-up of its waiters, and its NOTIFY). Nothing on
# MySQL, MariaDB or SQLite.

from django.db import migrations

from django_workflows.store.backends import routines

ROUTINES = ('postgresql/sql/dw_signal_v1.sql',)


def create_routines(apps, schema_editor):
    routines.create(schema_editor, ROUTINES)


def drop_routines(apps, schema_editor):
    routines.drop(schema_editor, ROUTINES)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0003_start_routine'),
    ]

    operations = [
        migrations.RunPython(create_routines, drop_routines, atomic=False),
    ]
