"""A page of messages stops before MESSAGE_PAGE_BYTES of content (docs/images-and-voice.md), so a thread
full of screenshots is read in bounded pieces; the cursor then goes on with no message skipped or repeated."""
from __future__ import annotations

import pytest
from django.conf import settings

from tests.support.images import image_part, png
from tests.support.run_requests import run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_page_of_large_images_is_cut_by_bytes_and_the_cursor_reads_on(api):
    side = 1000  # a 3 MB PNG: about 4 MB of base64 in each user message
    thread_id, _ = run(api, content=[image_part(png(side, side, seed=0), "a.png")])
    previous = api.thread(thread_id)["lastCompletedRunId"]
    for seed in (1, 2):
        run(api, content=[image_part(png(side, side, seed=seed), f"{seed}.png")], thread_id=thread_id,
            previousRunId=previous)
        previous = api.thread(thread_id)["lastCompletedRunId"]
    assert 3 * 4_000_000 > settings.MESSAGE_PAGE_BYTES > 4_100_000

    seen, pages, cursor = [], [], None
    while True:
        page = api.get(f"/v1/threads/{thread_id}/messages", limit=100, cursor=cursor).json()
        pages.append(len(page["messages"]))
        seen += [m["id"] for m in page["messages"]]
        size = sum(len(b.get("resource", {}).get("blob", "")) for m in page["messages"] for b in m["content"])
        assert size <= settings.MESSAGE_PAGE_BYTES or len(page["messages"]) == 1
        if not page["hasMore"]:
            break
        cursor = page["nextCursor"]
    assert len(pages) > 1  # 100 messages were asked for: the bytes cut the page
    assert seen == [m["id"] for m in api.thread(thread_id)["messages"]]
