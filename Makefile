# The two commands of the quick start: `make demo` and `make test`. Both set up first.
.PHONY: setup demo test bench clean

setup:
	./scripts/setup.sh

demo: setup
	python3 -m transportlab demo

test: setup
	cargo test --release --quiet
	python3 -m pytest -q tests

bench: setup
	./bench/engine

clean:
	python3 -m transportlab clean
