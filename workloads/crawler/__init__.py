"""The crawler workload: see README.md (Crawler) and python -m workloads.crawler --help.

Files: common.py (HTTP, HTML, URLs, the books; loop-free), one file per style
(callbacks.py, generators.py, coroutines.py, blocking.py), site.py (the site server, its own
process), __main__.py (the CLI and its JSON).
"""
