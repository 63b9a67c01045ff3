# The ride as a new version of its function, from the frozen file named here
# (store/backends/routines.py): on PostgreSQL dw_final_write_ride_v2, which picks the instance it
# leases in a materialized WITH. dw_final_write_ride_v1 picked it in a FROM subquery, which the
# planner may run again for each row of the instance table when the statistics are off; each
# run skips the rows the statement already leased, so it could lease two and fail the write.
# dw_final_write_ride_v1 stays for the workers of the previous version during a rolling deploy.
# Nothing on MySQL, MariaDB or SQLite.

from django.db import migrations

from django_workflows.store.backends import routines

ROUTINES = ('postgresql/sql/dw_final_write_ride_v2.sql',)


def create_routines(apps, schema_editor):
    routines.create(schema_editor, ROUTINES)


def drop_routines(apps, schema_editor):
    routines.drop(schema_editor, ROUTINES)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0005_mysql_signal_routine'),
    ]

    operations = [
        migrations.RunPython(create_routines, drop_routines, atomic=False),
    ]
