"""The contract's discovery: variants are folders, found without any list to edit."""

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import loops
from loops.__main__ import LOOPS_README, README, loops_readme_with_listing, readme_with_table

ROOT = Path(__file__).resolve().parent.parent

TEMP_VARIANT = """
from loops import Variant
from loops._aio import coroutines_namespace
import asyncio

VARIANT = Variant(
    name="{name}",
    summary="a throw-away variant made by tests/test_discovery.py",
    lineage="asyncio, borrowed for the test",
    capabilities=frozenset({{"core", "io"}}),
    coroutines=coroutines_namespace(asyncio.SelectorEventLoop),
)
"""


def test_reference_loops_are_discovered():
    assert {"asyncio", "uvloop", "trio", "curio"} <= set(loops.discover())


def test_unknown_name_is_an_error_listing_the_known_ones():
    with pytest.raises(loops.UnknownVariantError) as info:
        loops.get("nope")
    message = str(info.value)
    assert "'nope'" in message
    for name in loops.discover():
        assert name in message


def test_each_variant_speaks_a_style_and_claims_known_capabilities():
    for variant in loops.available().values():
        assert variant.styles, f"{variant.name} speaks no style"
        assert variant.capabilities <= loops.CAPABILITIES.keys()
        assert variant.summary and "\n" not in variant.summary


def test_asking_for_a_style_a_variant_does_not_speak_is_a_clear_error():
    with pytest.raises(ValueError, match="does not speak generators"):
        loops.get("asyncio").api("generators")


def test_readme_variants_table_is_current():
    # The committed table is written on 3.11; a variant unavailable there or here (curio on
    # 3.12+, asyncio_eager before 3.12) has a row naming the interpreter, which may differ.
    text = README.read_text()
    fresh = readme_with_table(text)
    unavailable = re.compile(r"^\| `(\w+)` \|.*\| unavailable on Python ", re.M)
    missing = {f"| `{name}` |" for name in unavailable.findall(text + fresh)}

    def rows(table: str) -> list[str]:
        return [line for line in table.splitlines() if not line.startswith(tuple(missing))]

    assert rows(fresh) == rows(text), "run `python -m loops --readme`"


def test_loops_readme_listing_is_current():
    """loops/README.md lists every entry of the folder by kind; it reads files, never runs them,
    so the listing is the same on every interpreter."""
    text = LOOPS_README.read_text()
    assert loops_readme_with_listing(text) == text, "run `python -m loops --readme`"


def test_the_listings_group_by_kind_and_every_variant_is_in_them():
    from loops.__main__ import KINDS, entries, variants_table

    kinds = [kind for kind, _, _ in entries()]
    assert kinds == sorted(kinds, key=list(KINDS).index)  # grouped, in the declared order
    listed = {entry.rstrip("/") for _, entry, _ in entries()}
    assert {name for name in loops.discover() if (ROOT / "loops" / name).is_dir()} <= listed
    assert {"_template", "contract.py", "primer.py", "why_a_loop.py"} <= listed
    table = variants_table().splitlines()[2:]
    home, reference = KINDS[loops.HOME_MADE], KINDS[loops.REFERENCE]
    row_kinds = [row.split(" | ")[1] for row in table]
    assert row_kinds == sorted(row_kinds, key=[home, reference].index)


def test_a_new_folder_is_a_variant_in_the_conformance_suite():
    name = f"zz_temp_{uuid.uuid4().hex[:8]}"
    folder = ROOT / "loops" / name
    folder.mkdir()
    try:
        (folder / "__init__.py").write_text(TEMP_VARIANT.format(name=name))
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "conformance",
                "--loop",
                name,
                "-v",
                "-k",
                "join_returns or echo_over",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"[{name}-coroutines] PASSED" in result.stdout
        assert name in result.stdout  # the summary table names the variant
    finally:
        shutil.rmtree(folder)
