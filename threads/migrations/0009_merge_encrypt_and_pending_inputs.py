from django.db import migrations


class Migration(migrations.Migration):
    # Two branches each added a threads migration after 0007: content encryption and MCP input requests.
    dependencies = [
        ("threads", "0008_h_encrypt"),
        ("threads", "0008_h_elicit_pending_inputs"),
    ]

    operations = []
