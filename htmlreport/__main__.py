"""python -m htmlreport [--reports DIR] [--out DIR]: write the static HTML report."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from htmlreport import build


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m htmlreport", description=__doc__)
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="stored data")
    parser.add_argument("--out", type=Path, default=None, help="default: REPORTS/site")
    args = parser.parse_args()
    started = time.perf_counter()
    written = build(args.reports, args.out or args.reports / "site")
    took = time.perf_counter() - started
    print(f"site: {len(written)} pages in {args.out or args.reports / 'site'} ({took:.1f} s)")


if __name__ == "__main__":
    main()
