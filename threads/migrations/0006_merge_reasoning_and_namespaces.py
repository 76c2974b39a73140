"""Joins two migrations written side by side (message reasoning, user-key namespaces); neither
depends on the other."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("threads", "0005_message_reasoning"),
        ("threads", "0005_user_key_namespaces"),
    ]

    operations = []
