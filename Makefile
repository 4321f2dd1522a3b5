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

# Rust tests (profile `checked`: overflow checks), Python tests (those marked `timing` one at
# a time, the rest with every shipped study and scenario two at a time) and the fuzz
# targets; scripts/test.sh says in which order and why.
test: lint
	./scripts/test.sh $(FUZZ_SECONDS)

fuzz: setup
	./scripts/fuzz.sh $(FUZZ_SECONDS)

bench: setup
	./bench/engine

clean:
	python3 -m transportlab clean
