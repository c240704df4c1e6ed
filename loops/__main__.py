"""`python -m loops` prints the variants table; `--readme` rewrites it in README.md.

A variant that cannot run on this interpreter is listed with the reason (and the command still
exits 0: an unavailable reference is a fact about the machine, not an error of the lab).
"""

import argparse
import re
from pathlib import Path

from loops import Variant, discover

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- variants:start -->", "<!-- variants:end -->"


def variants_table() -> str:
    """The README's variants table, generated from discovery."""
    rows = ["| variant | kind | styles | what it is |", "|---|---|---|---|"]
    for variant in discover().values():
        rows.append(variant_row(variant))
    return "\n".join(rows)


def variant_row(variant: Variant) -> str:
    """One row of the table; an unavailable variant's row carries its reason instead."""
    if not variant.available:
        return f"| `{variant.name}` | unavailable | — | {variant.summary} |"
    kind = "reference" if variant.reference else "home-made"
    return f"| `{variant.name}` | {kind} | {', '.join(variant.styles)} | {variant.summary} |"


def readme_with_table(text: str) -> str:
    """README text with the block between the variants markers replaced by the table."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    return pattern.sub(lambda _: f"{START}\n{variants_table()}\n{END}", text)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m loops", description=__doc__)
    parser.add_argument("--readme", action="store_true", help="rewrite the table in README.md")
    args = parser.parse_args()
    if args.readme:
        README.write_text(readme_with_table(README.read_text()))
        print(f"updated {README}")
    else:
        print(variants_table())


if __name__ == "__main__":
    main()
