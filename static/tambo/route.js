// The open thread lives in the URL (`?thread=thr_…`), so a thread can be bookmarked, a reload
// reopens it, and Back/Forward move between threads. Pure helpers; app.js touches `history`.

const THREAD_ID = /^thr_[A-Za-z0-9_-]{1,80}$/;

// The thread named by a URL's query, or null (a malformed id is ignored rather than sent).
export function threadFromUrl(href) {
  const id = new URL(href, "http://page.invalid").searchParams.get("thread");
  return id && THREAD_ID.test(id) ? id : null;
}

// The URL that names `threadId` (null: a new thread), keeping the rest of `href` as it is.
export function urlForThread(href, threadId) {
  const url = new URL(href, "http://page.invalid");
  if (threadId) url.searchParams.set("thread", threadId);
  else url.searchParams.delete("thread");
  return `${url.pathname}${url.search}${url.hash}`;
}
