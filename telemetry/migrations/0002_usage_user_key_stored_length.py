# The usage row stores the prefixed user key (projects/identities.py): `token:` + a 256-character claim
# did not fit in 256 characters on PostgreSQL, and the run that recorded it failed (issue 33, item 3).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='usage',
            name='user_key',
            field=models.CharField(blank=True, default='', max_length=300),
        ),
    ]
