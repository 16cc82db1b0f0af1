# Each target does its own set-up (scripts/setup creates .venv and installs).
.PHONY: setup test check bench-parse parse-demo clean

setup:
	scripts/setup

test: ## format, lint, types and the whole test suite
	scripts/check

bench-parse: setup
	.venv/bin/python -m benchmarks.bench_parse

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache .hypothesis benchmarks/.corpus

parse-demo: setup ## the reader on a shipped real sitemap (gzip): records on stdout, stats on stderr
	.venv/bin/harvester parse tests/data/conformance/cases/sitemaps_org_real.xml.gz --url https://www.sitemaps.org/sitemap.xml.gz
