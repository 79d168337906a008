"""The labelling view in a real headless Chromium, one browser for several checks: a whole item
labelled with the keyboard only (codes included, and after a mouse click on a checkbox), and
the comments readable in the light and the dark theme (contrast measured on screenshots)."""
from __future__ import annotations

import io
from collections import Counter

import pytest
from browser_kit import PASSWORD, first_label, ready_for_keys, settled, wait_for
from sqlmodel import Session

from annotate import i18n, service
from db import get_engine

pytestmark = pytest.mark.browser


def _sign_in(page, url, username, sign_in_lang="en", lang="en"):
    """Sign in on a sign-in page in `sign_in_lang`, then see the first item in `lang`."""
    from playwright.sync_api import expect

    say = {key: i18n.text(key, sign_in_lang) for key in
           ("signin.username", "signin.password", "signin.submit")}
    page.goto(url)
    page.get_by_role("textbox", name=say["signin.username"]).fill(username)
    page.get_by_role("textbox", name=say["signin.password"]).fill(PASSWORD)
    page.get_by_role("button", name=say["signin.submit"]).click()
    expect(page.get_by_text(i18n.text("label.item_of", lang, n=1, total=6))).to_be_visible(
        timeout=30000)
    ready_for_keys(page)


def _luminance(rgb) -> float:
    def channel(c):
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    """The WCAG contrast ratio of two colours."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_contrast(png: bytes) -> float:
    """Contrast of the text in a screenshot of one element: its background is the commonest
    colour, its text the pixel that stands out most from it (antialiased edges are weaker)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    pixels = [image.getpixel((x, y)) for y in range(image.height) for x in range(image.width)]
    background = Counter(pixels).most_common(1)[0][0]
    return max(contrast(p, background) for p in set(pixels))


def test_a_whole_item_by_keyboard_codes_included(app_db, launch_app, chromium):
    from playwright.sync_api import expect

    server = launch_app(app_db).url
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    _sign_in(page, server, "bas")
    page.mouse.click(720, 890)  # focus the page, not a field
    page.get_by_text("LG-GR3", exact=False).first.click()  # the mouse on a checkbox ...
    wait_for(lambda: first_label(app_db, "bas").codes == ("LG-GR3",), what="mouse code")
    settled(page)
    page.keyboard.press("3")  # ... leaves the keys working
    wait_for(lambda: first_label(app_db, "bas").accuracy == "incorrect", what="key 3")
    settled(page)
    page.keyboard.press("c")  # the code picker: type to filter, Enter toggles
    page.keyboard.type("GR1")
    page.keyboard.press("Enter")
    wait_for(lambda: first_label(app_db, "bas").codes == ("LG-GR1", "LG-GR3"), what="GR1")
    settled(page)
    page.keyboard.type("LG-GR3")
    page.keyboard.press("Enter")  # a chosen code picked again is removed
    wait_for(lambda: first_label(app_db, "bas").codes == ("LG-GR1",), what="GR3 removed")
    settled(page)
    page.keyboard.press("Escape")
    page.keyboard.press("m")  # the note: saved while typing (a pause is enough) ...
    page.keyboard.type("plural")
    wait_for(lambda: first_label(app_db, "bas").note == "plural", what="note while typing")
    settled(page)
    page.keyboard.type(" wrong")  # ... typing goes on where it was
    wait_for(lambda: first_label(app_db, "bas").note == "plural wrong", what="note")
    page.keyboard.press("Escape")  # ... and Esc gives the keys back
    settled(page)
    page.keyboard.press("s")
    expect(page.get_by_text("Item 2 of 6")).to_be_visible(timeout=20000)
    label = first_label(app_db, "bas")
    assert (label.accuracy, label.codes, label.note, label.status) == (
        "incorrect", ("LG-GR1",), "plural wrong", "done")


def test_themes_and_languages(app_db, ids, launch_app, chromium, tmp_path):
    """With the system in light and in dark mode: the comment boxes and the header reach the
    WCAG AA contrast (4.5) on screenshots, and the app menu offers the theme choice. The dark
    round runs in a Polish browser (the sign-in page follows it) for an account whose interface
    language is Greek: the item view is Greek and no code name is cut off."""
    from playwright.sync_api import expect

    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["bas"], "el")
        session.commit()
    server = launch_app(app_db).url
    for scheme, browser_locale, sign_in_lang, lang in (("light", "en-GB", "en", "el"),
                                                       ("dark", "pl-PL", "pl", "el")):
        context = chromium.new_context(viewport={"width": 1440, "height": 900},
                                       color_scheme=scheme, locale=browser_locale)
        page = context.new_page()
        _sign_in(page, server, "bas", sign_in_lang, lang)
        expect(page.get_by_role("button", name=i18n.text("button.save", lang))).to_be_visible(
            timeout=30000)  # a loaded machine draws the page slowly
        cut = page.evaluate("""[...document.querySelectorAll('[data-testid="stMain"] '
            + ':is([data-testid="stCheckbox"] label, [data-testid^="stBaseButton"]) p')]
            .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent)""")
        assert cut == [], f"code names cut off: {cut}"
        page.screenshot(path=str(tmp_path / f"item_{scheme}.png"))
        checks = {"predicted comment": page.locator(".nlce-diff-side pre").last,
                  "original comment": page.locator(".nlce-diff-side pre").first,
                  "comment in the code": page.locator("mark.nlce-mask"),
                  "header": page.locator(".nlce-head"),
                  "keys line": page.locator(".nlce-keys")}
        for what, element in checks.items():
            ratio = text_contrast(element.screenshot())
            assert ratio >= 4.5, f"{scheme} theme: {what} contrast {ratio:.2f} < 4.5"
        page.locator('[data-testid="stMainMenu"]').click()
        for theme in ("System", "Light", "Dark"):
            expect(page.get_by_role("menuitemradio", name=theme)).to_be_visible(timeout=10000)
        context.close()
