"""`python -m taxonomy [--lang LANG] [--clusters]` prints the tree;
`python -m taxonomy --validate FILE` checks another taxonomy file (exit 1 on error)."""
from __future__ import annotations

import argparse
import sys

from nlce.cli import EXIT_OK, run_main
from taxonomy.loader import default_taxonomy, load_taxonomy
from taxonomy.models import ACCURACY_LABELS, LANGUAGES, Taxonomy


def format_tree(tax: Taxonomy, lang: str = "en") -> str:
    lines = [f"taxonomy {tax.version} ({lang})"]

    def walk(code_id: str, depth: int) -> None:
        code = tax.code(code_id)
        lines.append(f"{'  ' * depth}{code.id:<{10 - 2 * depth}} {code.name[lang]}")
        for child in tax.children(code_id):
            walk(child.id, depth + 1)

    for code in tax.codes.values():
        if code.level in ("category", "meta"):
            walk(code.id, 0)
    lines.append("accuracy: " + " < ".join(tax.accuracy_text(label, lang)[0]
                                          for label in ACCURACY_LABELS))
    return "\n".join(lines)


def format_clusters(tax: Taxonomy, lang: str = "en") -> str:
    return "\n".join(f"{c.name} ({c.names[lang]}): {', '.join(c.codes)}"
                     for c in tax.clusters.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m taxonomy", description=__doc__)
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of the names")
    parser.add_argument("--clusters", action="store_true", help="also list the judge clusters")
    parser.add_argument("--validate", metavar="FILE", help="validate FILE and exit")
    args = parser.parse_args(argv)
    tax = load_taxonomy(args.validate) if args.validate else default_taxonomy()  # TaxonomyError: exit 2
    if args.validate:
        print(f"ok: {args.validate}: taxonomy {tax.version}, {len(tax.leaves())} leaves, "
              f"{len(tax.labelable()) - len(tax.leaves())} meta codes, "
              f"{len(tax.clusters)} clusters, {len(tax.variants)} variants")
        return EXIT_OK
    print(format_tree(tax, args.lang))
    if args.clusters:
        print(format_clusters(tax, args.lang))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m taxonomy"))
