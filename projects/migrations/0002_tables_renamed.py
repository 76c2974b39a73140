"""The moved tables take this app's names: threads_project, threads_project_members and threads_apikey
become projects_project, projects_project_members and projects_apikey.

Why rename rather than keep `db_table = "threads_project"` in the models for ever: the tables then say
which app owns them, a new database and a migrated one end up identical, and the models carry no
reminder of a layout that is gone. A rename costs nothing: a catalogue change on PostgreSQL, where
foreign keys follow the table rather than its name, and on SQLite, which since 3.26 rewrites the
references of other tables. The price: a server of the previous version still running after this
migration no longer finds its tables, so stop old servers before migrating (bin/serve and
docker-compose migrate before they start the server anyway).

It runs only after threads and tools have re-pointed their foreign keys in state (their migrations
below): until then threads' state still holds the old models on the old table names, and a
migration scheduled in between that rebuilds a table referring to them (SQLite rebuilds tables for
most field changes) would write a reference to a table that no longer exists.
"""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0001_initial"),
        ("threads", "0004_project_and_apikey_moved_to_projects"),
        ("tools", "0002_project_moved_to_projects"),
    ]

    operations = [
        # Renames the members table too: its name derives from the project's table.
        migrations.AlterModelTable(name="project", table=None),
        migrations.AlterModelTable(name="apikey", table=None),
    ]
