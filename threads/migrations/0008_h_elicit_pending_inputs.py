from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("threads", "0007_message_reasoning_blocks"),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="pending_inputs",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
