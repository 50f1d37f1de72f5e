"""Static files go out compressed, under names with a hash of their content, cacheable for a
year: a changed stylesheet gets a new name, so no browser keeps an old one."""

from __future__ import annotations

import re
import urllib.request


def fetch(url: str, **headers: str):
    request = urllib.request.Request(url, headers=headers)
    return urllib.request.urlopen(request, timeout=10)


def test_the_stylesheet_and_scripts_are_hashed_compressed_and_cached_long(agentboard_server):
    with fetch(f"{agentboard_server.url}/accounts/login/") as page:
        html = page.read().decode()
    assets = re.findall(r'(?:href|src)="(/static/[^"]+\.(?:css|js))"', html)
    assert len(assets) >= 4
    for asset in assets:
        assert re.search(r"\.[0-9a-f]{12}\.(css|js)$", asset), asset
        with fetch(f"{agentboard_server.url}{asset}", **{"Accept-Encoding": "gzip"}) as response:
            assert response.headers["Content-Encoding"] == "gzip", asset
            cache = response.headers["Cache-Control"]
            assert "immutable" in cache, asset
            assert int(re.search(r"max-age=(\d+)", cache).group(1)) >= 365 * 24 * 3600, asset
