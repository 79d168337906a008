"""The keyboard code picker's matching: an exact id or a unique start ticks exactly that code,
a query that matches several codes ticks none (and names them), nothing means "all"."""
from __future__ import annotations

from annotate import i18n
from annotate.codepick import pick_codes, said, toggled
from taxonomy import default_taxonomy


def _codes(lang="en"):
    return [(c.id, c.text("name", lang)) for c in default_taxonomy().labelable()]


def test_an_exact_id_ticks_that_code_even_when_it_starts_other_names():
    assert pick_codes("SE-MD", _codes()).codes == ("SE-MD",)
    assert pick_codes("se-md", _codes()).codes == ("SE-MD",)  # any case


def test_a_unique_start_ticks_that_code_and_an_ambiguous_one_ticks_none():
    assert pick_codes("GR1", _codes()).codes == ("LG-GR1",)  # the id after its category
    assert pick_codes("LG-GR3", _codes()).codes == ("LG-GR3",)
    pick = pick_codes("GR", _codes())
    assert pick.codes == () and pick.ambiguous == (
        ("GR", ("LG-GR1", "LG-GR2", "LG-GR3", "LG-GR4", "LG-GR5")),)


def test_a_name_ticks_its_code_only_when_it_names_one():
    assert pick_codes("URL", _codes()).codes == ("MS-ME2",)  # MS-ME2's whole name
    assert pick_codes("repetition", _codes()).codes == ()  # MS-RE1 and MS-RE2
    assert pick_codes("Liczba mnoga", _codes("pl")).codes in ((), ("LG-GR1",))


def test_several_words_each_tick_their_code_and_nothing_ticks_all():
    pick = pick_codes("GR1, SE-MD nonsense", _codes())
    assert pick.codes == ("LG-GR1", "SE-MD") and pick.unknown == ("nonsense",)
    assert pick_codes("", _codes()) == pick_codes("   ", _codes())
    assert pick_codes("", _codes()).codes == ()


def test_a_pick_toggles_its_codes_in_taxonomy_order_and_says_what_it_did():
    """What the annotator's picker and the lead's gold codes field do with a pick."""
    order = [code for code, _ in _codes()]
    pick = pick_codes("SE-MD GR1 GR nonsense", _codes())
    now = toggled(pick, ["SE-MD", "MS-ME2"], order)
    assert now == ["MS-ME2", "LG-GR1"]  # SE-MD unticked, LG-GR1 ticked; in the taxonomy's order
    line = said(pick, lambda code: code in now, lambda key, **v: i18n.text(key, "en", **v))
    assert line == ("SE-MD unticked · LG-GR1 ticked · “GR” matches 5 codes (LG-GR1, LG-GR2, "
                    "LG-GR3, LG-GR4, LG-GR5): nothing ticked, type more of one · "
                    "No code matches “nonsense”")
