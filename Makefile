# The two commands of the quick start: `make demo` and `make test`. Both set up first.
.PHONY: setup demo lint test fuzz bench clean

# Seconds each fuzz target runs in `make test` (override: make test FUZZ_SECONDS=300).
FUZZ_SECONDS ?= 10

setup:
	./scripts/setup.sh

demo: setup
	python3 -m transportlab demo

lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release --quiet -- -D warnings
	ruff check python tests bench scripts
	ruff format --check python tests bench scripts
	mypy

test: lint
	# Rust tests with overflow checks (profile `checked`; Cargo.toml says why not debug assertions).
	cargo test --profile checked --quiet
	python3 -m pytest -q -rA tests --ignore tests/test_scenarios_smoke.py
	# Every shipped study and scenario, two at a time (they check exit status, metrics and
	# unintended drops, not timing, so sharing the cores does not weaken them).
	python3 -m pytest -q -rA -n 2 tests/test_scenarios_smoke.py
	./scripts/fuzz.sh $(FUZZ_SECONDS)

fuzz: setup
	./scripts/fuzz.sh $(FUZZ_SECONDS)

bench: setup
	./bench/engine

clean:
	python3 -m transportlab clean
