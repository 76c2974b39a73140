// Relative times in the thread list, and the thread named by the page's URL.
import assert from "node:assert/strict";
import { test } from "node:test";

import { threadFromUrl, urlForThread } from "../../static/tambo/route.js";
import { relativeTime } from "../../static/tambo/time.js";

const NOW = Date.parse("2026-12-01T09:00:00Z");

test("recent times read as minutes, hours and days ago", () => {
  assert.equal(relativeTime("2026-12-01T08:59:40Z", NOW), "just now");
  assert.equal(relativeTime("2026-12-01T08:58:00Z", NOW), "2 min ago");
  assert.equal(relativeTime("2026-12-01T06:00:00Z", NOW), "3 h ago");
  assert.equal(relativeTime("2026-11-29T09:00:00Z", NOW), "2 d ago");
});

test("a clock slightly ahead still says just now, and nonsense says nothing", () => {
  assert.equal(relativeTime("2026-12-01T09:00:05Z", NOW), "just now");
  assert.equal(relativeTime("not a date", NOW), "");
});

test("older times show the date", () => {
  assert.match(relativeTime("2026-10-01T09:00:00Z", NOW), /2026/);
});

test("the thread id is read from the query and malformed ids are ignored", () => {
  assert.equal(threadFromUrl("http://x/?thread=thr_abc-1_2"), "thr_abc-1_2");
  assert.equal(threadFromUrl("http://x/"), null);
  assert.equal(threadFromUrl("http://x/?thread=../admin"), null);
  assert.equal(threadFromUrl("http://x/?thread=msg_abc"), null);
});

test("the URL for a thread keeps other query parameters and the hash", () => {
  assert.equal(urlForThread("http://x/?tab=1#top", "thr_a"), "/?tab=1&thread=thr_a#top");
  assert.equal(urlForThread("http://x/?thread=thr_a&tab=1", null), "/?tab=1");
  assert.equal(urlForThread("http://x/?thread=thr_a", null), "/");
});
