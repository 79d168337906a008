"""The label plan's parts of the lead's pages (`annotate.service.plans` does the work): "assign
by need" on the Assign page (choose, preview the plan's summary, confirm: stored and assigned)
and the stop rule of every plan on the Team page."""
from __future__ import annotations

import streamlit as st

from agreement import plans
from agreement.labels import DEFAULT_POLICY, POLICY_HELP
from annotate import service, ui
from annotate.service.plans import ESTIMANDS
from annotate.ui import t

PREVIEW_KEY = "nlce_plan_preview"  # (request, draft) the lead saw, until stored or replaced
# the stop rule's columns but the plan's name (each plan has a table of its own)
STATUS_COLUMNS = [c for c in plans.STATUS_COLUMNS if c != "plan"]


def _refusal(error: service.AnnotateError) -> str:
    """A refusal in the lead's interface language where it has a message of its own."""
    if isinstance(error, service.PlanError):
        return t(error.key, **{k: ui.plain(v) for k, v in error.values.items()})
    return ui.plain(error)


def _request(choices: dict) -> service.PlanRequest:
    return service.PlanRequest(
        dataset=choices["dataset"], predictor=choices["predictor"],
        budget=float(choices["budget"]), estimand=choices["estimand"],
        language=choices["language"], min_probability=float(choices["min_probability"]),
        seed=int(choices["seed"]), name=choices["name"] or None,
        target_width=float(choices["target_width"]) or None,
        labels=choices["labels"].strip() or DEFAULT_POLICY, uniform=bool(choices["uniform"]))


def assign_by_need(lead) -> None:
    """The Assign page's form: a plan previewed, then stored and assigned on confirmation."""
    st.subheader(t("plan.header"))
    st.caption(t("plan.caption"))
    with ui.db() as session:
        options = service.plan_options(session, acting=lead.id)
    if not options["predictors"]:
        st.info(t("plan.no_predictors"))
        return
    with st.form("plan"):
        c1, c2, c3, c4 = st.columns(4)
        choices = {
            "dataset": c1.selectbox(t("plan.dataset"), options["datasets"]),
            "predictor": c2.selectbox(t("plan.predictor"), options["predictors"]),
            "estimand": c3.selectbox(t("plan.estimand"), ESTIMANDS),
            "language": c4.selectbox(t("plan.language"), [None, *options["languages"]],
                                     format_func=lambda v: v or t("plan.all_languages"))}
        c5, c6, c7, c8 = st.columns(4)
        choices["budget"] = c5.number_input(t("plan.budget"), min_value=1, value=20)
        choices["min_probability"] = c6.number_input(t("plan.min_probability"), min_value=0.0,
                                                     max_value=1.0, value=0.05, step=0.01)
        choices["seed"] = c7.number_input(t("plan.seed"), min_value=0, value=0)
        choices["target_width"] = c8.number_input(t("plan.target_width"), min_value=0.0,
                                                  max_value=1.0, value=0.0, step=0.05)
        c9, c10 = st.columns(2)
        choices["name"] = c9.text_input(t("plan.name"))
        choices["labels"] = c10.text_input(t("plan.labels"), value=DEFAULT_POLICY,
                                           help=POLICY_HELP)
        choices["uniform"] = st.checkbox(t("plan.uniform"))
        previewed = st.form_submit_button(t("plan.preview"))
    if previewed:
        st.session_state.pop(PREVIEW_KEY, None)
        request = _request(choices)
        try:
            with ui.db() as session:  # nothing is written: the draft is only read
                draft = service.draft_plan(session, request, acting=lead.id)
        except service.AnnotateError as error:
            st.error(_refusal(error))
        else:
            st.session_state[PREVIEW_KEY] = (request, draft)
    if PREVIEW_KEY in st.session_state:
        _confirm(lead, *st.session_state[PREVIEW_KEY])


def _confirm(lead, request: service.PlanRequest, draft: service.PlanDraft) -> None:
    st.info(t("plan.summary", name=ui.plain(draft.name), pilot=len(draft.pilot),
              pool=len(draft.planned), left_out=draft.left_out,
              expected=f"{draft.expected:.1f}",
              drawn=len(draft.drawn), per_language=draft.per_language(draft.drawn)))
    st.caption(t("plan.method", method=ui.plain(draft.method)))
    if draft.uniform:
        st.caption(t("plan.uniform_note"))
    if not st.button(t("plan.confirm"), type="primary", key="plan_confirm"):
        return
    try:
        with ui.db() as session:  # one transaction: the plan, its generations, the assignments
            made = service.make_plan(session, request, acting=lead.id, preview=draft)
            assigned = service.assign_plan(session, made.name, acting=lead.id,
                                           labelled=made.labelled)
    except service.AnnotateError as error:
        st.error(_refusal(error))
        return
    st.session_state.pop(PREVIEW_KEY, None)
    st.success(t("plan.stored", name=ui.plain(made.name), drawn=len(made.drawn),
                 added=assigned.added))
    for short in assigned.short:  # never a silent "fewer than asked"
        items = ", ".join(f"#{g}" for g in short.items[:10]) + (
            " …" if len(short.items) > 10 else "")
        st.warning(t("assign.short", count=len(short.items), language=short.language,
                     wanted=short.wanted, items=items, speakers=short.speakers))


def plan_stop_rule(lead) -> None:
    """The Team page's table per plan: the stop rule (agreement.plans.plan_status)."""
    st.subheader(t("plan.status_header"))
    st.caption(t("plan.status_caption"))
    try:
        with ui.db() as session:
            found = service.plan_statuses(session, acting=lead.id)
    except service.AnnotateError as error:
        st.error(_refusal(error))
        return
    if not found:
        st.info(t("plan.none"))
        return
    for plan, policy, status in found:
        st.markdown(t("plan.status_plan", name=ui.plain(plan.name),
                      predictor=ui.plain(plan.predictor), estimand=plan.estimand,
                      policy=ui.plain(policy)))
        first = status.estimand != plan.estimand  # the plan's own estimand on top
        st.dataframe(status.assign(_order=first).sort_values("_order", kind="stable")
                     [STATUS_COLUMNS], hide_index=True, key=f"plan_status_{plan.name}")
