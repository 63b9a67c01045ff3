# The indexes of the parent, the schedule and the subject leave out the instances without one
# (most of them) where the database has partial indexes, and the subject's content type loses
# the index of its own that dw_instance_subject makes redundant: fewer index writes at each
# update of an instance's row. The content type's own index goes last, once dw_instance_subject
# is back: MySQL and MariaDB keep one index under every foreign key.

import django.db.models.deletion
import django_workflows.indexes
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('django_workflows', '0013_parked_instances'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='workflowinstance',
            name='dw_instance_parent',
        ),
        migrations.RemoveIndex(
            model_name='workflowinstance',
            name='dw_instance_schedule',
        ),
        migrations.RemoveIndex(
            model_name='workflowinstance',
            name='dw_instance_subject',
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.indexes.SetIndex(fields=['parent_id'], name='dw_instance_parent'),
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.indexes.SetIndex(fields=['schedule_id'], name='dw_instance_schedule'),
        ),
        migrations.AddIndex(
            model_name='workflowinstance',
            index=django_workflows.indexes.SetIndex(fields=['subject_type', 'subject_id'], name='dw_instance_subject'),
        ),
        migrations.AlterField(
            model_name='workflowinstance',
            name='subject_type',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contenttypes.contenttype'),
        ),
    ]
