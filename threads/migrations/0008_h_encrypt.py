"""Content encrypted at rest (threads/sealing.py): the threads' `sealed` flag, and the content columns
as SealedJSONField (the same jsonb/text columns: existing rows are plaintext and stay readable)."""
from django.db import migrations, models

import threads.sealing


class Migration(migrations.Migration):

    dependencies = [
        ('threads', '0007_message_reasoning_blocks'),
    ]

    operations = [
        migrations.AddField(
            model_name='thread',
            name='sealed',
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name='thread',
            name='agui_state',
            field=threads.sealing.SealedJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='message',
            name='content',
            field=threads.sealing.SealedJSONField(default=list),
        ),
        migrations.AlterField(
            model_name='message',
            name='component_state',
            field=threads.sealing.SealedJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name='message',
            name='additional_context',
            field=threads.sealing.SealedJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='message',
            name='reasoning',
            field=threads.sealing.SealedJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='message',
            name='reasoning_blocks',
            field=threads.sealing.SealedJSONField(blank=True, null=True),
        ),
    ]
