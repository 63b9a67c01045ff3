# A start outside a transaction as the database's own function, from the frozen file named here
# (store/backends/routines.py): on PostgreSQL dw_start_v1 (an instance's INSERT unless its id
# exists, and its NOTIFY), planned once per session. Nothing on MySQL, MariaDB or SQLite.

from django.db import migrations

from django_workflows.store.backends import routines

ROUTINES = ('postgresql/sql/dw_start_v1.sql',)


def create_routines(apps, schema_editor):
    routines.create(schema_editor, ROUTINES)


def drop_routines(apps, schema_editor):
    routines.drop(schema_editor, ROUTINES)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0002_routines'),
    ]

    operations = [
        migrations.RunPython(create_routines, drop_routines, atomic=False),
    ]
