from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0005_run_answered_model'),
    ]

    operations = [
        migrations.AddField(model_name='run', name='owner',
                            field=models.CharField(blank=True, max_length=40, null=True)),
        migrations.AddField(model_name='run', name='resume', field=models.JSONField(blank=True, null=True)),
        migrations.AddField(model_name='run', name='takeovers', field=models.JSONField(blank=True, default=list)),
        migrations.AddField(model_name='run', name='takeover_count', field=models.IntegerField(default=0)),
    ]
