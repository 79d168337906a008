"""Everyone: the labelling guidelines, i.e. the taxonomy in the interface language: the accuracy
scale, then per category its codes with their description and their inclusion and exclusion
criteria (the same texts the codes' hover help shows, all on one page to read or search)."""
from __future__ import annotations

import streamlit as st

from annotate import ui
from annotate.ui import t
from taxonomy import default_taxonomy

ui.current_user()
lang = ui.interface_language()
taxonomy = default_taxonomy()
st.header(t("nav.guidelines"))
st.caption(t("guide.caption"))

st.subheader(t("guide.accuracy"))
for key, label in (("1", "correct"), ("2", "partial"), ("3", "incorrect")):
    name, description = taxonomy.accuracy_text(label, lang)
    st.markdown(f"**{key} · {ui.plain(name)}**: {ui.plain(description)}")

labelable = taxonomy.labelable()
categories = list(dict.fromkeys(code.category for code in labelable))
for category in categories:
    known = category in taxonomy.codes
    title = taxonomy.code(category).text("name", lang) if known else t("label.other_category")
    st.subheader(f"{category} · {title}" if known else title)
    if known and taxonomy.code(category).text("description", lang):
        st.caption(ui.plain(taxonomy.code(category).text("description", lang)))
    for code in (c for c in labelable if c.category == category):
        lines = [f"**{code.id} · {ui.plain(code.text('name', lang))}**: "
                 f"{ui.plain(code.text('description', lang))}"]
        for key, field in (("label.include_if", "inclusion"), ("label.exclude_if", "exclusion")):
            criteria = code.text(field, lang)
            if criteria:
                lines.append(f"{t(key)}\n" + "\n".join(f"- {ui.plain(c)}" for c in criteria))
        with st.container(border=True):
            st.markdown("\n\n".join(lines))
