"""The twins' table: each declared kernel twin's figures over its design's, from one session."""

from types import SimpleNamespace

from bench.pages import twins
from bench.store import RESULTS, ResultStore, results_path


def test_the_pairs_are_the_kernel_twins_declared():
    found = twins.pairs()
    assert ("traps", "scopes") in found and ("traps", "completions") in found
    assert all(a != b for a, b in found)


def test_each_pair_reads_per_request_and_per_sleeper_with_where_it_ran():
    stores = {
        name: ResultStore.load(results_path(RESULTS, "quick", name), name, "quick")
        for name in ("echo", "sleep")
    }
    lines = twins.section(SimpleNamespace(stores=stores))
    assert lines and lines[0] == "## Twins"
    rows = [line for line in lines if line.startswith("| `completions` on `traps`")]
    figures = [row.split(" | ")[1] for row in rows]
    assert "echo, per request, fixed load" in figures
    assert any(figure.startswith("sleep, memory per sleeper") for figure in figures)
    for row in rows:  # the design's figure, the twin's, and the ratio with its interval
        design, twin, ratio = row.strip(" |").split(" | ")[2:]
        assert design[0].isdigit() and twin[0].isdigit()
        assert ratio.startswith("×") or ratio in ("no figure", "no ratio: another session")
    assert any(line.startswith("*Ran in:* session ") and "commit `" in line for line in lines)


def test_nothing_stored_leaves_the_section_off():
    assert twins.section(SimpleNamespace(stores={})) == []
