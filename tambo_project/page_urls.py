"""The browser page's routes (the page itself lives in templates/ and static/)."""
urlpatterns: list = []
