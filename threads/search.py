"""Staff search by words, on plaintext and encrypted projects alike (the admin's thread and message
lists; docs/projects.md#content-encrypted-at-rest).

SQL finds the words of a plaintext message (its `content` as text, `LIKE`), not those of a message
stored encrypted (threads/sealing.py): the database holds a Fernet token, which no LIKE can look into
and which a short term matches by chance. So a search has two halves:

- SQL, as Django's admin builds it: each term in one of the identifier fields (ids, user key, name),
  or in the content of a message whose thread is not `sealed`;
- Python, for the messages of `sealed` threads: the `ADMIN_SEARCH_ENCRYPTED_MESSAGES` most recent of
  them within the list as filtered (a project, a role), read in batches of `BATCH`, decrypted and
  matched here. Older ones are not searched (the result says so); nothing decrypted is kept.

Nothing is written: no plaintext, no index of words, so key rotation has nothing to redo. The price
is the bound: a search decrypts at most that many messages inside the request.

Terms are split as Django's admin splits them (quotes keep words together); every term must match,
each in any field; matching ignores case. A message's words are the strings of its content (text,
tool arguments and results, component props), without uploaded files' bytes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils.text import smart_split, unescape_string_literal

from projects.secrets import SecretUnreadable
from threads.models import Message, Thread
from threads.sealing import open_json

# Messages read and decrypted per statement: a batch of 1 KB messages is about 200 KB in memory.
BATCH = 200
THREAD_FIELDS = ("id", "user_key", "name", "external_id")
MESSAGE_FIELDS = ("id", "thread__id", "thread__user_key", "tool_call_id", "external_id")


@dataclass
class Scan:
    """What the Python half read: the encrypted messages decrypted, whether older ones were left out
    (`limited`), those no configured key decrypts (skipped, counted), and per message that holds any
    term: (message id, thread id, the terms it holds)."""

    scanned: int = 0
    limited: bool = False
    unreadable: int = 0
    hits: list[tuple[str, str, set[str]]] = field(default_factory=list)


def search_terms(search_term: str) -> list[str]:
    """The terms of a search box's text, as Django's admin splits them (`ModelAdmin.get_search_results`)."""
    terms = []
    for bit in smart_split(search_term):
        if bit.startswith(('"', "'")) and bit[0] == bit[-1]:
            bit = unescape_string_literal(bit)
        if bit:
            terms.append(bit)
    return terms


def content_words(content: Any) -> str:
    """The strings of a message's content (not its keys, not a file's bytes), one a line."""
    words: list[str] = []

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, str):
            if key != "blob":
                words.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(content)
    return "\n".join(words)


def _terms_in(terms: Iterable[str], texts: Iterable[str | None]) -> set[str]:
    """The terms (already casefolded) found in any of the texts."""
    haystack = "\n".join(t for t in texts if t).casefold()
    return {term for term in terms if term in haystack}


def _sealed_window(messages: QuerySet[Message], limit: int) -> tuple[list[str], bool]:
    """The ids of the `limit` most recent messages of sealed threads among `messages`, and whether
    there were more. Reads ids only: nothing is decrypted here."""
    ids = list(messages.filter(thread__sealed=True).order_by("-created_at", "-id")
               .values_list("pk", flat=True)[:limit + 1])
    return ids[:limit], len(ids) > limit


def _sealed_rows(ids: list[str]):
    """(message id, thread id, its identifier fields, its content's words) of each id, `BATCH` a
    statement; a row no key decrypts is yielded with words None."""
    for start in range(0, len(ids), BATCH):
        # The stored text (a cast), decrypted here row by row: one unreadable row must not end the search.
        rows = Message.objects.filter(pk__in=ids[start:start + BATCH]).values_list(
            *MESSAGE_FIELDS, Cast("content", output_field=TextField()))
        for *identifiers, raw in rows:
            try:
                words = content_words(open_json(json.loads(raw))) if raw else ""
            except SecretUnreadable:
                words = None
            yield identifiers[0], identifiers[1], identifiers, words


def sealed_scan(messages: QuerySet[Message], terms: list[str], *, limit: int | None = None,
                identifiers: bool = True) -> Scan:
    """Decrypts the most recent encrypted messages among `messages` (at most `limit`, by default
    ADMIN_SEARCH_ENCRYPTED_MESSAGES) and notes which of the casefolded `terms` each holds in its words
    (and in its identifier fields, with `identifiers`)."""
    scan = Scan()
    limit = settings.ADMIN_SEARCH_ENCRYPTED_MESSAGES if limit is None else limit
    ids, scan.limited = _sealed_window(messages, limit)
    for message_id, thread_id, fields, words in _sealed_rows(ids):
        scan.scanned += 1
        if words is None:
            scan.unreadable += 1
            continue
        matched = _terms_in(terms, [*fields, words] if identifiers else [words])
        if matched:
            scan.hits.append((message_id, thread_id, matched))
    return scan


def _any_field(names: Iterable[str], term: str) -> Q:
    return Q.create([(f"{name}__icontains", term) for name in names], connector=Q.OR)


def message_search(queryset: QuerySet[Message], search_term: str, *,
                   limit: int | None = None) -> tuple[QuerySet[Message], Scan]:
    """The messages of `queryset` whose words or identifiers hold every term, and what the encrypted
    half read. For staff only (the admin): it decrypts."""
    terms = search_terms(search_term)
    if not terms:
        return queryset, Scan()
    folded = {t.casefold() for t in terms}
    scan = sealed_scan(queryset, sorted(folded), limit=limit)
    found = [message_id for message_id, _, matched in scan.hits if matched >= folded]
    sql = Q()
    for term in terms:
        sql &= _any_field(MESSAGE_FIELDS, term) | Q(thread__sealed=False, content__icontains=term)
    return queryset.filter(sql | Q(pk__in=found)), scan


def thread_search(queryset: QuerySet[Thread], search_term: str, *,
                  limit: int | None = None) -> tuple[QuerySet[Thread], Scan]:
    """The threads of `queryset` that hold every term, each in an identifier (id, user key, name) or
    in the words of one of its messages, and what the encrypted half read. For staff only."""
    terms = search_terms(search_term)
    if not terms:
        return queryset, Scan()
    folded = {t.casefold() for t in terms}
    scan = sealed_scan(Message.objects.filter(thread__in=queryset.filter(sealed=True).values("pk")),
                       sorted(folded), limit=limit, identifiers=False)
    # A thread's terms: those of its encrypted messages read, and those of its own fields.
    held: dict[str, set[str]] = {}
    for _, thread_id, matched in scan.hits:
        held.setdefault(thread_id, set()).update(matched)
    for identifiers in Thread.objects.filter(pk__in=list(held)).values_list(*THREAD_FIELDS):
        held[identifiers[0]] |= _terms_in(folded, identifiers)
    found = [thread_id for thread_id, matched in held.items() if matched >= folded]
    sql = Q()
    for term in terms:
        in_words = Message.objects.filter(thread_id=OuterRef("pk"), content__icontains=term)
        sql &= _any_field(THREAD_FIELDS, term) | Q(Exists(in_words), sealed=False)
    return queryset.filter(sql | Q(pk__in=found)), scan
