"""The labelling view: one item at a time, every change saved at once.

State lives in st.session_state under "lbl_*" keys; the database is the truth. Entering an item
(or reloading it after another tab saved meanwhile) writes its stored label into the widgets."""
from __future__ import annotations

import html
import time

import streamlit as st

from annotate import outage, service, ui
from annotate.codepick import pick_codes, said
from annotate.label_state import (  # the page, its callbacks and the save path share these
    S,
    _flush_pending,
    _item,
    _item_error,
    _queue,
    _reload_item,
    _save,
    _wkey,
)
from annotate.render import item_html
from annotate.ui import t
from taxonomy import default_taxonomy

SHORTCUTS = {"correct": "1", "partial": "2", "incorrect": "3", "prev": "P", "next": "N",
             "save": "S", "skip": "K", "flag": "F", "undo": "U"}
MORE_CONTEXT = (80, 60)  # lines above and below the comment when the annotator asks for more
FILTER_KEY = "lbl_filter"  # which items Previous/Next visit: all, or one state
FILTERS = ("all", "todo", "draft", "done", "skipped", "flagged")
KEYS_LINE = (("1", "correct"), ("2", "partial"), ("3", "incorrect"), ("N", "next"),
             ("P", "prev"), ("S", "save"), ("K", "skip"), ("F", "flag"), ("U", "undo"),
             ("C", "codes"), ("M", "note"), ("Esc", "leave"))
PICKER_KEY = "lbl_codepick"  # the type-to-filter code picker; `C` focuses it (ui.KEYBOARD_JS)
ACCURACY_ORDER = ("correct", "partial", "incorrect")  # as the study's Table 2 lists them

# ------------------------------------------------------------------------------ callbacks

def on_accuracy(label: str) -> None:
    item = _item()
    previous = item.get("accuracy")
    item["accuracy"] = label
    if not _save(service.status_after_change(item.get("status"), label)
                 if item.get("status") != "skipped" else "done"):
        item["accuracy"] = previous


def on_change() -> None:
    _save()


def on_pick() -> None:
    """Enter in the picker: the code the query names (an exact id, a unique start of one, or a
    unique part of a name) toggles its checkbox; a query that names several codes or none
    ticks nothing and says so. The picker empties for the next one."""
    query = S.get(PICKER_KEY) or ""
    S[PICKER_KEY] = ""
    lang = ui.interface_language()
    pick = pick_codes(query, [(c.id, c.text("name", lang)) for c in default_taxonomy().labelable()])
    for code in pick.codes:
        S[_wkey("code", code)] = not S.get(_wkey("code", code), False)
    S["lbl_pick_said"] = said(pick, lambda code: S[_wkey("code", code)], t)
    if pick.codes:
        _save()


def on_nav(kind: str) -> None:
    S["lbl_nav"] = kind


def on_save_next() -> None:
    item = _item()
    if not item.get("accuracy"):
        ui.flash("warning", t("msg.choose_accuracy"))
        return
    if _save("flagged" if item.get("status") == "flagged" else "done"):
        S["lbl_nav"] = "next_open"


def on_skip() -> None:
    if _save("skipped"):
        S["lbl_nav"] = "next_open"


def on_flag() -> None:
    item = _item()
    flagged = item.get("status") == "flagged"
    if _save(("done" if item.get("accuracy") else "draft") if flagged else "flagged"):
        ui.flash("info", t("msg.flag_removed") if flagged else t("msg.flagged"))


def on_filter(key: str) -> None:
    S[FILTER_KEY] = S.get(key, "all")
    S["lbl_nav"] = "filter"


def on_search() -> None:
    """The search box: items whose id is the text, or whose comments or path contain it."""
    text = (S.get("lbl_search") or "").strip()
    if len(text) > service.MAX_SEARCH_CHARS:  # (the service cuts it there)
        ui.flash("warning", t("search.cut", limit=service.MAX_SEARCH_CHARS))
    user = ui.current_user()
    if not text or user is None:
        S.pop("lbl_found", None)
    else:
        with ui.db() as session:
            S["lbl_found"] = service.search_queue(session, user.id, text)
    S["lbl_nav"] = "filter"


def _search(queue) -> None:
    """Search and filters (text or #id, model, language): Previous/Next stay within them."""
    with st.popover(t("search.button"), width="stretch"):
        st.text_input(t("search.text"), key="lbl_search", on_change=on_search,
                      placeholder=t("search.placeholder"))
        for key, what, values in (("lbl_model", "search.model", {e.model for e in queue}),
                                  ("lbl_language", "search.language",
                                   {e.language for e in queue})):
            everything = t("filter.all")  # now: a format function may run after the page
            st.selectbox(t(what), ["", *sorted(values)], key=key, on_change=on_filter_nav,
                         format_func=lambda v, a=everything: v or a)
        if S.get("lbl_found") is not None:
            st.caption(t("search.found", count=len(S["lbl_found"])))


def on_filter_nav() -> None:
    S["lbl_nav"] = "filter"


def _restore(version: dict) -> bool:
    """Save an earlier version of this label again, as a new version (history keeps all)."""
    item = _item()
    before = item.get("accuracy")
    item["accuracy"] = version["accuracy"]
    codes = set((version.get("codes") or "").split())
    for code in default_taxonomy().labelable():
        S[_wkey("code", code.id)] = code.id in codes
    S[_wkey("note")] = version.get("note") or ""
    status = version["status"] if version.get("accuracy") or version["status"] != "done" \
        else "draft"
    if _save(status):
        ui.flash("success", t("msg.restored", revision=version["revision"]))
        return True
    item["accuracy"] = before
    return False


def _own_versions() -> list[dict]:
    user = ui.current_user()
    if _item()["gid"] is None or user is None:
        return []
    with ui.db() as session:
        return service.own_history(session, _item()["gid"], user.id)


def on_undo() -> None:
    """Back to the version before the last save (pressed again: forward to it)."""
    versions = _own_versions()
    if len(versions) < 2:
        ui.flash("info", t("msg.nothing_to_undo"))
        return
    _restore(versions[1])


def on_restore() -> None:
    wanted = S.get("lbl_restore_pick")
    chosen = next((v for v in _own_versions() if v["revision"] == wanted), None)
    if chosen is not None:
        _restore(chosen)


# ------------------------------------------------------------------------------ page

def _step_within(allowed: list[int], current: int | None, delta: int) -> int | None:
    """The neighbour of `current` among the `allowed` queue positions (clamped to the ends)."""
    if not allowed:
        return current
    if current is None:
        return allowed[0] if delta > 0 else allowed[-1]
    if delta > 0:
        later = [i for i in allowed if i > current]
        return later[0] if later else (current if current in allowed else allowed[-1])
    earlier = [i for i in allowed if i < current]
    return earlier[-1] if earlier else (current if current in allowed else allowed[0])


def _choose_current(state: service.QueueState, user_id: int) -> tuple[int | None, list[int]]:
    """The queue position to show, and the positions a search matches ([] without a search)."""
    nav = S.pop("lbl_nav", None)
    queue = state.entries
    current = state.index_of(S.get("lbl_gid"))
    if current is None:  # a fresh session: the URL may name the item (reload, bookmark)
        try:
            current = state.index_of(int(st.query_params.get("item", "")))
        except ValueError:
            current = None
    if current is None:  # a new tab: the item this browser showed last
        current = state.index_of(ui.last_item(user_id))
    wanted = S.get(FILTER_KEY, "all")
    found, model, language = S.get("lbl_found"), S.get("lbl_model"), S.get("lbl_language")
    allowed = [i for i, e in enumerate(queue) if (wanted == "all" or e.state == wanted)
               and (found is None or e.generation_id in found)
               and (not model or e.model == model) and (not language or e.language == language)]
    searched = found is not None or bool(model) or bool(language)
    narrowed = wanted != "all" or searched
    if nav == "filter":
        if allowed:
            current = allowed[0]
        else:
            S["lbl_filter_empty"] = "match" if searched else wanted
    elif nav in ("next", "prev"):
        before = current
        current = (_step_within(allowed, current, +1 if nav == "next" else -1) if narrowed
                   else service.step(queue, current, +1 if nav == "next" else -1))
        if current == before:  # at an end: say so rather than nothing
            S["lbl_nav_end"] = (nav, len(allowed) if narrowed else None)
    elif nav == "next_open":
        following = service.next_open(queue, current)
        if following is None:
            S["lbl_all_done"] = True
        else:
            current = following
    if current is None:
        current = service.first_open(queue)
        if current is None and queue:
            current = 0
            S["lbl_all_done"] = True
    return current, allowed if searched else []


def _enter_item(view: service.ItemView) -> None:
    """First draw of an item in this visit: start its clock and seed its widgets."""
    S["lbl_item"] = {"gid": view.generation_id, "revision": view.own.revision,
                     "accuracy": view.own.accuracy, "status": view.own.status,
                     "note": view.own.note, "base_seconds": view.own.seconds_spent,
                     "shown_at": time.time()}
    S.pop("lbl_saved_at", None)  # "saved hh:mm:ss" belongs to the item it was saved on
    stored = set(view.own.codes)
    for code in default_taxonomy().labelable():
        S[_wkey("code", code.id)] = code.id in stored
    S[_wkey("note")] = view.own.note


def _clock(seconds: float | None) -> str:
    """h:mm:ss or m:ss, readable in every interface language."""
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _time_line(total: service.Progress) -> str:
    """Time on this item (earlier visits included) and the time the rest of the queue takes at
    the annotator's median pace (shown when the page is drawn)."""
    item = _item()
    spent = service.visit_seconds(item["base_seconds"], item["shown_at"], time.time())
    pace = S.get("lbl_pace")
    left = pace * (total.assigned - total.done) if pace else None
    return t("label.time", item_time=_clock(spent), left=_clock(left))


def _header(queue, index, view, progress, matches: list[int]) -> None:
    """Where the item is (in a search: which match, then where in the queue), what it is, the
    progress and the time."""
    total = progress.get("*", service.Progress())
    entry = queue[index]
    per_lang = " · ".join(f"{lang} {p.done}/{p.assigned}" for lang, p in progress.items()
                          if lang != "*")
    state = t(f"state.{entry.state}")
    saved = S.get("lbl_saved_at")
    position = html.escape(
        t("label.match_of", k=matches.index(index) + 1, count=len(matches), n=index + 1,
          total=len(queue)) if index in matches else t("label.item_of", n=index + 1,
                                                          total=len(queue)))
    counts = html.escape(t("label.progress", done=total.done, assigned=total.assigned,
                           per_language=per_lang, skipped=total.skipped, flagged=total.flagged))
    about = [f"<b>{position}</b>", f"#{view.generation_id}", html.escape(view.language)]
    if view.programming_language:  # a pairs item has none, nor a path
        about.append(html.escape(view.programming_language))
    if view.path:
        about.append(f"<code>{html.escape(view.path)}</code>")
    about += [html.escape(t("label.model", model=view.model)), f"<b>{html.escape(state)}</b>"]
    if saved:
        about.append(html.escape(t("label.saved_at", time=saved)))
    st.html(f'<div class="nlce-head">{" · ".join(about)}'
            f"<br>{counts} · {html.escape(_time_line(total))}</div>")
    st.progress(total.fraction)


def _code_column(view: service.ItemView) -> None:
    more = S.get("lbl_more_context", False)  # a preference: it stays on from item to item
    st.html(item_html(view, ui.item_words(), before=MORE_CONTEXT[0] if more else 14,
                      after=MORE_CONTEXT[1] if more else 10))
    if not view.model_wrote_nothing:
        st.toggle(t("label.more_context"), key="lbl_more_context")


def _criteria(code, lang: str) -> str:
    lines = [f"**{code.id} {code.text('name', lang)}**", code.text("description", lang)]
    inclusion, exclusion = code.text("inclusion", lang), code.text("exclusion", lang)
    if inclusion:
        lines.append(t("label.include_if") + "\n" + "\n".join(f"- {c}" for c in inclusion))
    if exclusion:
        lines.append(t("label.exclude_if") + "\n" + "\n".join(f"- {c}" for c in exclusion))
    return "\n\n".join(lines)


def _code_groups(lang: str) -> list[list[tuple[str, list]]]:
    """The labelable codes by category, spread over three columns of similar height."""
    taxonomy = default_taxonomy()
    groups: dict[str, list] = {}
    for code in taxonomy.labelable():
        groups.setdefault(code.category, []).append(code)
    titled = []
    for category, codes in groups.items():
        title = (taxonomy.code(category).text("name", lang)
                 if category in taxonomy.codes else t("label.other_category"))
        titled.append((f"{category} · {title}" if category in taxonomy.codes else title, codes))
    columns: list[list] = [[], [], []]
    height = [0, 0, 0]
    for title, codes in titled:
        k = height.index(min(height))
        columns[k].append((title, codes))
        height[k] += len(codes) + 1
    return columns


def _label_column(view: service.ItemView, lang: str, user_id: int) -> None:
    taxonomy = default_taxonomy()
    item = _item()
    buttons = st.columns(3, gap="small")
    for col, label in zip(buttons, ACCURACY_ORDER):
        name, description = taxonomy.accuracy_text(label, lang)
        col.button(name, key=f"lbl_acc_{label}", help=description, on_click=on_accuracy,
                   args=(label,), shortcut=SHORTCUTS[label], width="stretch",
                   type="primary" if item.get("accuracy") == label else "secondary")
    st.text_input(t("label.codes"), key=PICKER_KEY, on_change=on_pick,
                  label_visibility="collapsed", placeholder=t("label.picker"))
    picked = S.pop("lbl_pick_said", "")
    if picked:
        st.caption(ui.plain(picked))
    for column, groups in zip(st.columns(3, gap="small"), _code_groups(lang)):
        with column:
            for title, codes in groups:
                st.html(f'<div class="nlce-cat">{html.escape(title)}</div>')
                for code in codes:
                    st.checkbox(f"{code.id} {code.text('name', lang)}", key=_wkey("code", code.id),
                                help=_criteria(code, lang), on_change=on_change)
    # no max_chars: Streamlit would count UTF-16 units; keyboard.js keeps the note to the
    # import's limit in code points (ui.note_state), and db.annotations.check_label refuses more
    st.text_area(t("label.note"), key=_wkey("note"), height=68, on_change=on_change,
                 placeholder=t("label.note_placeholder"), label_visibility="collapsed")
    ui.note_state(user_id, view.generation_id, item.get("note") or "")
    nav = st.columns(5, gap="small")
    nav[0].button(t("button.prev"), key="lbl_prev", on_click=on_nav, args=("prev",),
                  shortcut=SHORTCUTS["prev"], width="stretch")
    nav[1].button(t("button.next"), key="lbl_next", on_click=on_nav, args=("next",),
                  shortcut=SHORTCUTS["next"], width="stretch")
    nav[2].button(t("button.save"), key="lbl_save", on_click=on_save_next, type="primary",
                  shortcut=SHORTCUTS["save"], width="stretch")
    nav[3].button(t("button.skip"), key="lbl_skip", on_click=on_skip, shortcut=SHORTCUTS["skip"],
                  width="stretch")
    nav[4].button(t("button.unflag" if item.get("status") == "flagged" else "button.flag"),
                  key="lbl_flag",
                  on_click=on_flag, shortcut=SHORTCUTS["flag"], width="stretch")
    keys = " · ".join(f"<kbd>{key}</kbd> {html.escape(_key_word(what, lang))}"
                      for key, what in KEYS_LINE)
    st.html(f'<div class="nlce-keys" data-shortcuts="{"".join(SHORTCUTS.values())}">'
            f'{html.escape(t("keys.title"))}: {keys}. '
            f'{html.escape(t("keys.tail"))}</div>')
    ui.keyboard_helper()


def _key_word(what: str, lang: str) -> str:
    """What a key of the keys line does: an accuracy by its name on the buttons (the taxonomy's),
    anything else from the catalogue (keys.*)."""
    if what in ACCURACY_ORDER:
        return default_taxonomy().accuracy_text(what, lang)[0]
    return t("keys." + what)


def _history(view: service.ItemView, user) -> None:
    if view.own.history > 1:
        with st.expander(t("label.history", count=view.own.history)):
            with ui.db() as session:
                versions = service.own_history(session, view.generation_id, user.id)
            st.dataframe(versions, hide_index=True)
            pick, restore = st.columns([3, 1], vertical_alignment="bottom")
            pick.selectbox(t("label.restore"), [v["revision"] for v in versions[1:]],
                           key="lbl_restore_pick")
            restore.button(t("label.restore"), key="lbl_restore", on_click=on_restore)


def page() -> None:
    user = ui.current_user()
    if not _flush_pending():
        outage.wait_for_database()
        return
    ui.show_flash()
    state = _queue(user)
    queue = state.entries
    if not queue:
        st.info(t("label.no_items"))
        return
    index, matches = _choose_current(state, user.id)
    gid = queue[index].generation_id
    try:
        with ui.db() as session:
            view = service.load_item(session, gid, user.id)
    except (service.ItemGoneError, service.NotAssignedError) as error:
        st.warning(ui.plain(_item_error(error, gid)))
        S.pop("lbl_gid", None)
        _reload_item()
        return
    if _item().get("gid") != gid:
        _enter_item(view)
        with ui.db() as session:  # read once per visit of the item
            _item()["lead_answer"] = service.flag_answer(session, gid, user.id)
    S["lbl_gid"] = gid
    st.query_params["item"] = str(gid)
    # Drawn on every run, empty or not: a notice that came and went above the header would
    # shift it, and the browser would remount the search box under it, closing it (issue 42)
    notices = st.container()
    known = {c.id for c in default_taxonomy().labelable()}
    retired = [c for c in view.own.codes if c not in known]
    if retired:
        notices.warning(t("label.retired_codes", codes=", ".join(retired),
                          version=default_taxonomy().version))
    if S.pop("lbl_all_done", False):
        st.toast(t("label.all_done"), icon="✅", duration="long")
    end = S.pop("lbl_nav_end", None)
    if end:
        way, count = end
        st.toast(t(f"label.end_{way}") if count is None
                 else t(f"label.end_{way}_match", count=count), icon="🔎")
    empty = S.pop("lbl_filter_empty", None)
    if empty:
        st.toast(t("label.no_items_match") if empty in ("match", "all")
                 else t("label.no_items_here", state=t(f"state.{empty}")), icon="🔎")
    if _item().get("lead_answer"):
        with notices.container(border=True):
            st.caption(t("label.lead_answer"))
            st.text(_item()["lead_answer"])  # the lead's text, shown as typed
    progress = state.progress()  # includes what this run's callbacks saved
    head, search, choose, undo = st.columns([0.6, 0.12, 0.16, 0.12], vertical_alignment="bottom")
    with head:
        _header(queue, index, view, progress, matches)
    names = {f: t("filter.all") if f == "all" else t(f"state.{f}") for f in FILTERS}
    key = f"{FILTER_KEY}_{ui.interface_language()}"  # per language: shown in the new one at once
    choose.selectbox(t("filter.label"), FILTERS, key=key, on_change=on_filter, args=(key,),
                     index=FILTERS.index(S.get(FILTER_KEY, "all")), format_func=names.get)
    with search:
        _search(queue)
    undo.button(t("button.undo"), key="lbl_undo", on_click=on_undo, shortcut=SHORTCUTS["undo"],
                width="stretch")
    lang = ui.interface_language()
    left, right = st.columns([0.47, 0.53], gap="medium")
    with left:
        _code_column(view)
    with right:
        _label_column(view, lang, user.id)
    _history(view, user)


page()
