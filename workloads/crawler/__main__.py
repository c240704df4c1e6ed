"""Crawl a site on any variant, in any style it speaks; print a summary, optionally JSON.

    python -m workloads.crawler --loop NAME [--style S] URL [--concurrency N] [--per-host N]
        [--timeout S] [--max-pages N] [--max-bytes N] [--max-redirects N] [--json FILE]

It follows same-origin ``<a href>`` links of HTML pages from URL, with --concurrency workers
sharing at most --per-host keep-alive connections, and records errors by kind as it goes. The
JSON record and the exit status: ``workloads/README.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from workloads.common import (
    add_loop_arguments,
    interrupted,
    number,
    peak_rss_mib,
    positive,
    resolve,
    style_module,
)
from workloads.crawler.common import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_REDIRECTS,
    DEFAULT_TIMEOUT,
    BadURL,
    Crawl,
    Options,
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.crawler",
        description="Crawl one origin from URL on a lab loop; print a summary.",
    )
    parser.add_argument("url", metavar="URL", help="where to start (http://host[:port]/path)")
    add_loop_arguments(parser)
    option = parser.add_argument
    option(
        "--concurrency",
        type=positive(int),
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help="workers taking URLs from the queue (default %(default)s)",
    )
    option(
        "--per-host",
        type=positive(int),
        metavar="N",
        help="keep-alive connections open at once to the origin (default: one per worker)",
    )
    option(
        "--timeout",
        type=positive(float),
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help="seconds for one request: connect, send, the whole response (default %(default)s)",
    )
    option(
        "--max-pages",
        type=positive(int),
        metavar="N",
        help="fetch at most N URLs (default: no limit)",
    )
    option(
        "--max-bytes",
        type=positive(int),
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help="a larger body is a too-big error (default %(default)s)",
    )
    option(
        "--max-redirects",
        type=number(int, 0),
        default=DEFAULT_MAX_REDIRECTS,
        metavar="N",
        help="redirects followed from one URL (default %(default)s)",
    )
    option("--json", metavar="FILE", help="write the results as JSON ('-': stdout)")
    args = parser.parse_args(argv)
    variant, args.style = resolve(parser, args)
    args.api = variant.api(args.style)
    return args


def run(args: argparse.Namespace) -> dict:
    """Crawl as the arguments say; the results as the JSON object."""
    options = Options(
        concurrency=args.concurrency,
        per_host=args.per_host,
        timeout=args.timeout,
        max_bytes=args.max_bytes,
        max_pages=args.max_pages,
        max_redirects=args.max_redirects,
    )
    books = Crawl(args.url, options)
    style = style_module("workloads.crawler", args.style)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        style.crawl(args.api, books)
    finally:
        books.progress.done()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    result = {"workload": "crawler", "loop": args.loop, "style": args.style}
    result |= vars(options) | {"per_host": options.connections}
    result |= books.summary()
    result |= {"wall_s": wall, "cpu_s": cpu, "pages_per_s": result["pages_fetched"] / wall}
    result["peak_rss_mib"] = round(peak_rss_mib(), 1)
    result["pages"] = [record.as_json() for record in books.pages()]
    return result


def summary_text(result: dict) -> str:
    errors = ", ".join(f"{kind} {n}" for kind, n in result["errors"].items()) or "none"
    return "\n".join(
        [
            f"crawled {result['start']} on {result['loop']} ({result['style']}), "
            f"{result['concurrency']} workers, {result['per_host']} connections",
            f"pages   {result['pages_fetched']} fetched, {result['pages_ok']} ok, "
            f"{result['error_count']} errors",
            f"errors  {errors}",
            f"links   {result['off_origin_links']} off-origin (not fetched), "
            f"{result['ignored_links']} other schemes, {result['over_budget']} over --max-pages",
            f"bytes   {result['bytes']:,}",
            f"time    {result['wall_s']:.3f} s wall, {result['cpu_s']:.3f} s CPU, "
            f"{result['pages_per_s']:,.0f} pages/s",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except BadURL as error:
        print(f"crawler: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: no results, no traceback
        return interrupted("crawler")
    print(summary_text(result), file=sys.stderr if args.json == "-" else sys.stdout)
    if args.json == "-":
        print(json.dumps(result, indent=1))
    elif args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
