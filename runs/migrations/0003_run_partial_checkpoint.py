from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0002_run_usage"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="partial_message_id",
            field=models.CharField(blank=True, max_length=40, null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="partial_text",
            field=models.TextField(blank=True, null=True),
        ),
    ]
