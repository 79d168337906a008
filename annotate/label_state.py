"""The labelling view's state and save path: the item and queue cached in st.session_state
under "lbl_*" keys (the database is the truth), and saving a label, kept and retried when the
database is out (`annotate.outage`). The page itself is `annotate/views/label.py`."""
from __future__ import annotations

import threading
import time

import streamlit as st

from annotate import outage, service, ui
from annotate.ui import t
from taxonomy import default_taxonomy

QUEUE_MAX_AGE_S = 300  # re-read the whole queue this often, to pick up new assignments

S = st.session_state


def _item() -> dict:
    return S.setdefault("lbl_item", {"gid": None})


def _wkey(kind: str, code: str = "") -> str:
    # Fixed keys: the widgets stay mounted from item to item (cheaper to redraw); entering an
    # item writes its stored values into them before they are drawn.
    return f"lbl_{kind}_{code}"


def _codes_from_widgets() -> list[str]:
    return [c.id for c in default_taxonomy().labelable() if S.get(_wkey("code", c.id))]


def _note_from_widget() -> str:
    return S.get(_wkey("note"), _item().get("note", "")) or ""


def _reload_item() -> None:
    """Forget the cached item and queue so the next run reads them from the database."""
    S["lbl_item"] = {"gid": None}
    S.pop("lbl_queue", None)


def _queue(user) -> service.QueueState:
    queue = S.get("lbl_queue")
    now = time.time()
    if queue is None or queue.is_stale(now, QUEUE_MAX_AGE_S):
        with ui.db() as session:
            queue = service.QueueState.load(session, user.id, now)
            S["lbl_pace"] = service.median_done_seconds(session, user.id)
        S["lbl_queue"] = queue
    return queue


_LOCKS = threading.Lock()


def _save_lock() -> threading.Lock:
    """This browser tab's one-save-at-a-time lock. A key or click that comes while the page
    runs starts a new run at once, in a new thread (Streamlit's fast reruns), while the old run
    may still be storing a label: without the lock both saves start from the same revision and
    the tab refuses its own second save as "changed in another tab or session" (issue 34)."""
    with _LOCKS:
        return S.setdefault("lbl_save_lock", threading.Lock())


def _save(status: str | None = None) -> bool:
    """Write the current label (accuracy, codes, note, time) now; True when stored."""
    item = _item()
    user = ui.current_user()
    if item["gid"] is None or user is None:
        return False
    with _save_lock():
        return _save_now(item, user, status)


def _save_now(item: dict, user, status: str | None) -> bool:
    was = item.get("status")
    status = status or service.status_after_change(item.get("status"), item.get("accuracy"))
    codes, note = _codes_from_widgets(), _note_from_widget()
    seconds = service.visit_seconds(item["base_seconds"], item["shown_at"], time.time())
    label = dict(generation_id=item["gid"], annotator_id=user.id, accuracy=item.get("accuracy"),
                 codes=codes, note=note, seconds_spent=seconds, status=status,
                 expected_revision=item.get("revision"))
    try:
        saved, pace = _store(label, was, with_pace=True)
        # At once: the next access to st.session_state stops this run if a newer one has
        # started (see _save_lock), and that one must find the revision stored here. `item` is
        # a plain dict: writing it never stops the run.
        item.update(revision=saved.revision, status=saved.status, note=note)
    except (service.ItemGoneError, service.NotAssignedError) as error:
        ui.flash("warning", _item_error(error, item["gid"]))
        S.pop("lbl_gid", None)
        _reload_item()
        return False
    except service.LabelError as error:
        ui.flash("error", str(error))
        _reload_item()
        return False
    except service.StaleAnnotationError:
        _say_stale(label)
        _reload_item()
        return False
    except Exception as error:
        if not outage.is_database_unavailable(error):
            raise
        outage.keep(label)  # stored by _flush_pending once the database is back
        return False
    outage.forget()  # a newer label was stored: an older kept one must not follow it
    if "lbl_queue" in S:
        S["lbl_queue"].record(item["gid"], saved.status, item.get("accuracy"))
    S["lbl_saved_at"] = time.strftime("%H:%M:%S")
    S.update(pace)
    return True


def _store(label: dict, was: str | None = None, *, with_pace: bool = False
           ) -> tuple[service.Saved, dict]:
    """Store `label`. `with_pace`: where the item is or was (`was`) done, the annotator's pace
    with this label (the header's time left), read in the same session; returned as
    {"lbl_pace": ...} (else {}) for the caller to put in st.session_state once the revision is
    recorded (see _save_now)."""
    with ui.db() as session:
        saved = service.save_label(session, **label)
        if with_pace and "done" in (was, saved.status):
            return saved, {"lbl_pace": service.median_done_seconds(session,
                                                                   label["annotator_id"])}
        return saved, {}


def _say_stale(label: dict) -> None:
    attempted = t("msg.attempted", accuracy=label["accuracy"] or "-",
                  codes=" ".join(label["codes"]) or "-", note=repr(label["note"]))
    ui.flash("error", t("msg.stale", gid=label["generation_id"], attempted=attempted))


def _item_error(error: Exception, gid: int) -> str:
    """The service's refusal in the interface language."""
    return t("msg.item_gone" if isinstance(error, service.ItemGoneError) else
             "msg.not_assigned", gid=gid)


def _flush_pending() -> bool:
    """Store the label kept during a database outage; False while the database is still out
    (the page then shows only the outage line and retries)."""
    with _save_lock():
        return _flush_now()


def _flush_now() -> bool:
    label = outage.pending()
    if label is None:
        return True
    if not label:  # stored by a run that stopped before it could forget it (see _save)
        outage.forget()
        _reload_item()
        return True
    if not outage.retry_due():
        return False
    gid = label["generation_id"]
    try:
        _store(label)
        label.clear()  # stored (a plain dict: this holds even if the run stops next, see _save)
    except Exception as error:
        if outage.is_database_unavailable(error):
            return False
        outage.forget()
        if isinstance(error, service.StaleAnnotationError):
            _say_stale(label)
        elif isinstance(error, (service.ItemGoneError, service.NotAssignedError)):
            ui.flash("warning", _item_error(error, gid))
        elif isinstance(error, service.LabelError):
            ui.flash("warning", str(error))
        else:
            raise
    else:
        outage.forget()
        ui.flash("success", t("msg.db_back", gid=gid))
    _reload_item()  # show what is stored now
    return True
