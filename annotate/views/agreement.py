"""Lead: inter-annotator agreement per language, on the accuracy label and per taxonomy code.
The statistics come from agreement.statistics, the project's one implementation."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from agreement.judges import load_verdicts
from agreement.replace import replace_tables
from annotate import service, ui
from annotate.ui import t
from taxonomy import default_taxonomy

lead = ui.require_lead()
st.header(t("agree.header"))
with_expert = st.toggle(t("agree.expert"), value=False, key="agree_expert")
with ui.db() as session:
    labels = service.finished_labels(session, acting=lead.id, include_expert=with_expert)
codes = [c.id for c in default_taxonomy().labelable()]
reports = [r for r in service.agreement_by_language(labels, codes) if r.n_items]
if not reports:
    st.info(t("agree.none"))
    st.stop()


def _mean(values) -> float | None:
    finite = [float(v) for v in values if v == v]
    return sum(finite) / len(finite) if finite else None


overview = [{"language": r.language, "items (2+ labels)": r.n_items, "annotators": len(r.raters),
             "mean pairwise kappa (quadratic)": _mean(r.pairs.kappa),
             "Krippendorff alpha (ordinal)": None if r.alpha is None or math.isnan(r.alpha)
             else r.alpha}
            for r in reports]
st.dataframe(overview, hide_index=True, key="agree_overview")
st.caption("Kappa: quadratically weighted Cohen's kappa per pair of annotators on the items "
           "both labelled; alpha when a language has more than two annotators. Per code: "
           "Krippendorff's alpha (nominal) on presence/absence, and the mean pairwise F1.")
for tab, report in zip(st.tabs([r.language for r in reports]), reports):
    with tab:
        st.dataframe(report.pairs, hide_index=True, key=f"agree_pairs_{report.language}")
        used = report.codes[report.codes.items_with_code > 0]
        st.dataframe(used, hide_index=True, key=f"agree_codes_{report.language}")

def verdict(row) -> str:
    """One judge in one slice: passes or fails with its numbers, or why it cannot be tested."""
    if pd.isna(row.winning_rate):
        return "– " + row.method.removeprefix("no test: ")
    numbers = {"omega": f"{row.winning_rate:.2f}", "rho": f"{row.advantage_probability:.2f}"}
    return t("agree.replace.passes" if row.passed else "agree.replace.fails", **numbers)


@st.fragment
def replace_section(labels) -> None:
    """The alternative annotator test per judge: a new epsilon reruns only this part (the labels
    and the agreement above are not read and worked out again)."""
    st.subheader(t("agree.replace.header"))
    epsilon = st.number_input(t("agree.replace.epsilon"), min_value=0.0, max_value=0.95,
                              value=0.2, step=0.05, key="agree_epsilon")
    verdicts = load_verdicts(ui.db_url())
    if verdicts.empty:
        st.info(t("agree.replace.none"))
        return
    annotations = pd.DataFrame([(r.generation_id, r.annotator, r.accuracy) for r in labels],
                               columns=["generation_id", "annotator", "accuracy"])
    replace, _ = replace_tables(annotations, verdicts,
                                {r.generation_id: r.language for r in labels}, "accuracy",
                                float(epsilon))
    shown = replace.assign(over=replace.slice_value,
                           result=[verdict(r) for r in replace.itertuples()])
    st.dataframe(shown.pivot(index="judge", columns="over", values="result").reset_index(),
                 hide_index=True, key="agree_replace")
    st.caption(t("agree.replace.caption", epsilon=epsilon))


replace_section(labels)
