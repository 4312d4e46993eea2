"""A page served to a real browser with the network cut: the browser tests' and the page benchmark's.

Playwright routes every request of a new browser context: the page's own URL gets the HTML, any
other request (a script, style, image or font the page would fetch) is refused and recorded.
"""

from __future__ import annotations

from typing import Any

URL = "http://symad.invalid/page.html"


def offline_context(browser: Any, html: str, refused: list[str], width: int = 1100, height: int = 620) -> Any:
    """A new context of ``browser`` whose only answer is ``html`` at :data:`URL`; every other request
    is aborted and its URL appended to ``refused``."""
    context = browser.new_context(viewport={"width": width, "height": height})

    def route(r: Any) -> None:
        if r.request.url == URL:
            r.fulfill(body=html, content_type="text/html; charset=utf-8")
        else:
            refused.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context
