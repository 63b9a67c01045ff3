# A signal outside a transaction as the database's own procedure, from the frozen file named
# here (store/backends/routines.py): on MySQL and MariaDB dw_signal_v1 (in a transaction of its
# own, under the signal lock, a signal's INSERT unless its dedupe id was sent and the wake-up of
# its waiters; then the wake-up count). Nothing on PostgreSQL or SQLite.

from django.db import migrations

from django_workflows.store.backends import routines

ROUTINES = ('mysql/sql/dw_signal_v1.sql',)


def create_routines(apps, schema_editor):
    routines.create(schema_editor, ROUTINES)


def drop_routines(apps, schema_editor):
    routines.drop(schema_editor, ROUTINES)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0004_signal_routine'),
    ]

    operations = [
        migrations.RunPython(create_routines, drop_routines, atomic=False),
    ]
