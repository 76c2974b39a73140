"""The admin shows images and files as what they are: a thumbnail or a named link served by a small
staff-only view, never the blob inlined in the page (docs/operations.md)."""
import base64
import re

import pytest

from projects.models import Project
from tests.support.admin import admin_url
from threads import services
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 6000  # 1.5 MB, a PNG by its magic number
PDF = b"%PDF-1.4\n" + b"0" * 1000


def resource(name: str, mime: str, data: bytes) -> dict:
    return {"type": "resource", "resource": {"name": name, "mimeType": mime, "blob": base64.b64encode(data).decode()}}


@pytest.fixture
def thread(db) -> Thread:
    project = Project.objects.create(name="media")
    thread = services.thread_create(project=project, user_key="alice", name="Ten images")
    for index in range(10):
        services.message_create(thread=thread, role="user", content=[
            {"type": "text", "text": f"image {index}"}, resource(f"shot{index}.png", "image/png", PNG)])
    services.message_create(thread=thread, role="user", content=[resource("report.pdf", "application/pdf", PDF)])
    return thread


def test_a_thread_page_with_ten_large_images_is_small_and_shows_thumbnails(admin_client, thread):
    page = admin_client.get(admin_url(Thread, "change", thread.id))
    assert page.status_code == 200
    html = page.content.decode()
    assert len(page.content) < 200_000, len(page.content)
    assert base64.b64encode(PNG[:300]).decode()[:40] not in html  # no blob inlined
    thumbs = re.findall(r'<img class="tambo-thumb" src="([^"]+)"', html)
    assert len(thumbs) == 10
    image = admin_client.get(thumbs[0])
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert b"".join(image.streaming_content if image.streaming else [image.content]) == PNG
    assert image["X-Content-Type-Options"] == "nosniff"
    # The PDF is a named link to the same view.
    link = re.search(r'<a class="tambo-file" href="([^"]+)"[^>]*>report.pdf</a>', html)
    assert link, "no link named report.pdf"
    pdf = admin_client.get(link.group(1))
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf" and pdf.content == PDF


def test_a_message_page_with_an_image_is_small(admin_client, thread):
    message = Message.objects.filter(thread=thread).order_by("created_at").first()
    page = admin_client.get(admin_url(Message, "change", message.id))
    assert page.status_code == 200 and len(page.content) < 200_000, len(page.content)
    assert 'class="tambo-thumb"' in page.content.decode()


def test_the_file_view_is_for_staff_only(client, django_user_model, thread):
    message = Message.objects.filter(thread=thread).order_by("created_at").first()
    url = admin_url(Message, "change", message.id).replace("/change/", "/part/1/")
    assert client.get(url).status_code == 302  # to the admin's login
    # force_login: the login form's throttling (django-axes) authenticates only with a request.
    client.force_login(django_user_model.objects.create_user("plain", password="pw-plain-1234"))
    assert client.get(url).status_code == 302


def test_a_part_that_is_not_a_stored_file_is_404(admin_client, thread):
    message = Message.objects.filter(thread=thread).order_by("created_at").first()
    base = admin_url(Message, "change", message.id).replace("/change/", "/part/")
    assert admin_client.get(base + "0/").status_code == 404  # the text part
    assert admin_client.get(base + "9/").status_code == 404
