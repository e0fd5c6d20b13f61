# Convenience targets; README.md's two commands are scripts/demo and scripts/test.
.PHONY: demo test build format lint clean

demo:
	./scripts/demo

test:
	./scripts/test

build:
	./scripts/bootstrap

format:
	.venv/bin/ruff format locktune testsuite cocci/*.py scripts/*.py scripts/enable-deb-src setup.py
	.venv/bin/ruff check --fix locktune testsuite cocci/*.py scripts/*.py scripts/enable-deb-src setup.py
	git ls-files '*.c' '*.h' '*.cpp' | grep -v -e '^testsuite/cocci/' -e '^testsuite/rewrite/' -e '^testsuite/refactor/cases/' -e '^bench/results/' | xargs clang-format -i

lint:
	.venv/bin/ruff format --check locktune testsuite cocci/*.py scripts/*.py scripts/enable-deb-src setup.py
	.venv/bin/ruff check locktune testsuite cocci/*.py scripts/*.py scripts/enable-deb-src setup.py
	git ls-files '*.c' '*.h' '*.cpp' | grep -v -e '^testsuite/cocci/' -e '^testsuite/rewrite/' -e '^testsuite/refactor/cases/' -e '^bench/results/' | xargs clang-format --dry-run --Werror

clean:
	rm -rf build .venv *.egg-info locktune/_native
