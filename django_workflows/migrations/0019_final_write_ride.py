# A claim that rides on an instance's last write, where the store has it (PostgreSQL's
# dw_final_write_ride, store/backends/postgresql/rides.py): the write that ends an instance also
# leases the next due one to the same worker, in one transaction, so a busy worker needs almost
# no claims of its own. Nothing on the other databases.

from django.db import migrations

from django_workflows.store.backends import backend


def create_ride_function(apps, schema_editor):
    backend(schema_editor.connection.alias).create_ride_function(schema_editor)


def drop_ride_function(apps, schema_editor):
    backend(schema_editor.connection.alias).drop_ride_function(schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('django_workflows', '0018_claim_order_indexes'),
    ]

    operations = [
        migrations.RunPython(create_ride_function, drop_ride_function),
    ]
