"""core/public_urls.py: the host of an image URL is resolved and must be public, unless the operator
allows it (MEDIA_URL_ALLOWED_HOSTS). The run routes' refusals are tested over HTTP in
tests/runs/test_attachments.py; here the operator's allow-list."""
from __future__ import annotations

import pytest

from core.public_urls import check_public_url
from core.sanity import InputError


def test_a_private_host_is_refused_until_the_operator_allows_its_network(settings):
    settings.MEDIA_URL_ALLOWED_HOSTS = []
    with pytest.raises(InputError) as refused:
        check_public_url("http://10.1.2.3/cat.png", "message.content[0].resource.uri")
    assert refused.value.field == "message.content[0].resource.uri"

    settings.MEDIA_URL_ALLOWED_HOSTS = ["10.1.0.0/16"]
    check_public_url("http://10.1.2.3/cat.png", "f")
    with pytest.raises(InputError):
        check_public_url("http://10.2.0.1/cat.png", "f")  # outside the allowed network


def test_an_allowed_name_passes_though_it_resolves_to_loopback(settings):
    settings.MEDIA_URL_ALLOWED_HOSTS = ["localhost"]
    check_public_url("http://localhost:9000/cat.png", "f")
    with pytest.raises(InputError):
        check_public_url("http://127.0.0.1:9000/cat.png", "f")  # the name was allowed, not the address


def test_a_public_address_passes(settings):
    settings.MEDIA_URL_ALLOWED_HOSTS = []
    check_public_url("https://93.184.215.14/cat.png", "f")
    check_public_url("https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/cat.png", "f")
