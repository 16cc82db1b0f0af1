# Each target does its own set-up (scripts/setup creates .venv and installs).
.PHONY: setup test check demo bench bench-parse bench-pipeline bench-realweb parse-demo clean

setup:
	scripts/setup

test: ## format, lint, types and the whole test suite
	scripts/check

demo: setup ## the main job, offline: a small synthetic web on loopback, harvested by `harvester run`
	.venv/bin/python scripts/demo.py

bench: setup ## harvester vs the raw limits and the peers on one corpus; writes benchmarks/RESULTS.md
	.venv/bin/python -m pip install --quiet -e ".[bench]"
	.venv/bin/python -m benchmarks run --profile many --hosts 2000 --timeout 600 --write-results

bench-parse: setup
	.venv/bin/python -m benchmarks.bench_parse

bench-pipeline: setup ## 2,000 hosts, ~3.2M URLs on loopback, vs the network and CPU limits, 3 interleaved rounds
	.venv/bin/python -m benchmarks.bench_pipeline --hosts 2000 --workers 2 --rounds 3

DOMAINS ?= 2000
SEED ?= 1
bench-realweb: setup ## harvester vs Scrapy on a seeded web of small, slow, broken and dead sites (a network namespace; needs unshare and nft)
	.venv/bin/python -m pip install --quiet -e ".[bench]"
	.venv/bin/python -m benchmarks.realweb --domains $(DOMAINS) --seed $(SEED) --tools harvester,scrapy-tuned,scrapy --timeout 1500 --write-results

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache .hypothesis benchmarks/.corpus

parse-demo: setup ## the reader on a shipped real sitemap (gzip): records on stdout, stats on stderr
	.venv/bin/harvester parse tests/data/conformance/cases/sitemaps_org_real.xml.gz --url https://www.sitemaps.org/sitemap.xml.gz
