# A transcription's usage row (telemetry/calls.py `model_transcribe`): a choice only, no column changes.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0003_h_memory_usage_kind'),
    ]

    operations = [
        migrations.AlterField(
            model_name='usage',
            name='kind',
            field=models.CharField(choices=[('run', 'Run'), ('name', 'Name'), ('suggestions', 'Suggestions'), ('gateway', 'Gateway'), ('memory', 'Memory'), ('transcription', 'Transcription')], default='run', max_length=20),
        ),
    ]
