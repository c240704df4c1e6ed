"""`python -m loops` lists what is in loops/, grouped by kind: the variants (home-made loops,
then reference adapters, each with the styles it speaks here), then what is not a variant (the
template, the contract, the reading files, the shared helpers). `--readme` rewrites the
variants table in the root README.md and the folder's listing in loops/README.md; `--json`
prints what this interpreter can run (the bench asks another interpreter so).

A variant that cannot run on this interpreter is listed with the reason and keeps its kind
(and the command still exits 0: an unavailable reference is a fact about the machine, not an
error of the lab).
"""

import argparse
import json
import re
from pathlib import Path

from loops import HOME_MADE, PYTHON, REFERENCE, Variant, _docstring, discover

LOOPS = Path(__file__).resolve().parent
README = LOOPS.parent / "README.md"
LOOPS_README = LOOPS / "README.md"
START, END = "<!-- variants:start -->", "<!-- variants:end -->"
LISTING_START, LISTING_END = "<!-- listing:start -->", "<!-- listing:end -->"

# Every kind of entry in loops/, in the order the listings show them, with what tells it apart.
KINDS = {
    HOME_MADE: "home-made loop",  # a variant folder whose VARIANT is not a reference
    REFERENCE: "reference adapter",  # a variant folder adapting a production loop
    "template": "template",  # a folder starting with `_`: not a variant (`nox -s new`'s)
    "contract": "contract",  # contract.py
    "reading": "reading",  # another module not starting with `_`: read and run, not a loop
    "helper": "shared helper",  # a module starting with `_`
}
CONTRACT = "contract.py"


def by_kind(variants: dict[str, Variant]) -> list[Variant]:
    """The variants, home-made loops first, then reference adapters, each group by name."""
    order = list(KINDS)
    return sorted(variants.values(), key=lambda v: (order.index(v.kind), v.name))


def variants_table() -> str:
    """The README's variants table, generated from discovery, grouped by kind."""
    rows = ["| variant | kind | styles | what it is |", "|---|---|---|---|"]
    rows += [variant_row(variant) for variant in by_kind(discover())]
    return "\n".join(rows)


def variant_row(variant: Variant) -> str:
    """One row of the table; an unavailable variant keeps its kind and shows its reason."""
    styles = ", ".join(variant.styles) or "—"
    return f"| `{variant.name}` | {KINDS[variant.kind]} | {styles} | {variant.summary} |"


def entries() -> list[tuple[str, str, str]]:
    """The listing of loops/: (kind, entry, its docstring's first line), grouped by kind.

    Read from the files without running them, so the listing is the same on every interpreter
    (a variant unavailable here is listed like any other).
    """
    variants = discover()
    found = []
    for path in sorted(LOOPS.iterdir()):
        name = path.name
        if path.is_dir() and (path / "__init__.py").is_file():
            if name.startswith("_"):
                kind = "template"
            elif name in variants:
                kind = variants[name].kind
            else:
                continue
            found.append((kind, f"{name}/", _first_line(path / "__init__.py")))
        elif path.suffix == ".py" and not name.startswith("__"):
            kind = (
                "helper" if name.startswith("_") else "contract" if name == CONTRACT else "reading"
            )
            found.append((kind, name, _first_line(path)))
    order = list(KINDS)
    return sorted(found, key=lambda entry: (order.index(entry[0]), entry[1]))


def _first_line(path: Path) -> str:
    lines = _docstring(path).splitlines()
    return lines[0] if lines else ""


def listing() -> str:
    """loops/README.md's listing of the folder: one row per entry, grouped by kind."""
    rows = ["| kind | entry | what it is |", "|---|---|---|"]
    for kind, entry, what in entries():
        rows.append(f"| {KINDS[kind]} | [`{entry}`]({entry}) | {what} |")
    return "\n".join(rows)


def not_variants() -> str:
    """What `python -m loops` adds after the variants: the entries that are not variants."""
    rows = ["| not a variant | entry | what it is |", "|---|---|---|"]
    for kind, entry, what in entries():
        if kind not in (HOME_MADE, REFERENCE):
            rows.append(f"| {KINDS[kind]} | `{entry}` | {what} |")
    return "\n".join(rows)


def availability() -> dict:
    """This interpreter's version and, per variant, its styles and why it cannot run (or None)."""
    return {
        "python": PYTHON,
        "variants": {
            name: {"styles": list(variant.styles), "unavailable": variant.unavailable}
            for name, variant in discover().items()
        },
    }


def _between(text: str, start: str, end: str, body: str) -> str:
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{start}\n{body}\n{end}", text)


def readme_with_table(text: str) -> str:
    """README text with the block between the variants markers replaced by the table."""
    return _between(text, START, END, variants_table())


def loops_readme_with_listing(text: str) -> str:
    """loops/README.md text with the block between the listing markers replaced by the listing."""
    return _between(text, LISTING_START, LISTING_END, listing())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m loops", description=__doc__)
    parser.add_argument(
        "--readme",
        action="store_true",
        help="rewrite the variants table in README.md and the listing in loops/README.md",
    )
    parser.add_argument("--json", action="store_true", help="print availability here as JSON")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(availability()))
    elif args.readme:
        README.write_text(readme_with_table(README.read_text()))
        LOOPS_README.write_text(loops_readme_with_listing(LOOPS_README.read_text()))
        print(f"updated {README} and {LOOPS_README}")
    else:
        print(f"{variants_table()}\n\n{not_variants()}")


if __name__ == "__main__":
    main()
