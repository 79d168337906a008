"""The labelling app under Streamlit's AppTest, signed in: what the app's page tests start from."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "annotate" / "app.py")


def signed_in(username: str, password: str) -> AppTest:
    """The app run once, then signed in as `username` (the database comes from the environment
    the calling test set up)."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="sign_in_user").input(username)
    at.text_input(key="sign_in_password").input(password)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at
