"""The study's error taxonomy: 26 error leaves under MS, LG, SE and ST, the meta codes EX and
MISC, their criteria, the 7 judge clusters and the ordinal accuracy scale, in en/zh/nl/el/pl.

The taxonomy itself is data (`taxonomy/data/taxonomy-v1.yaml`); this package loads, validates
and navigates it. It imports nothing else of the project but `nlce.cli` (its errors are `UserError`s).

>>> tax = default_taxonomy()
>>> tax.code("lg_gr1").name["en"], tax.cluster_of("LG-GR1")
('Plurality', 'linguistic_grammar')
>>> tax.map_variant(["LG-GR4", "ST-IF2"], variant="variant-gr6")
('LG-GR4', 'ST-IF')
"""
from taxonomy.accuracy import AccuracyLabel
from taxonomy.loader import default_taxonomy, load_taxonomy
from taxonomy.models import (
    ACCURACY_LABELS,
    LANGUAGES,
    Cluster,
    Code,
    Taxonomy,
    TaxonomyError,
    Variant,
    normalise_code,
)

__all__ = [
    "ACCURACY_LABELS", "AccuracyLabel", "LANGUAGES", "TaxonomyError", "Taxonomy", "Code",
    "Cluster", "Variant", "load_taxonomy", "default_taxonomy", "normalise_code",
]
