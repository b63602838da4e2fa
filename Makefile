# Convenience targets; each calls scripts/dev.sh, which needs only bash and Python
# (it creates .venv and installs what it needs).
.PHONY: demo test test-slow bench paper-figures clean

demo:
	bash scripts/dev.sh demo

test:
	bash scripts/dev.sh test

test-slow:
	bash scripts/dev.sh test-slow

bench:
	bash scripts/dev.sh bench

paper-figures:
	bash scripts/dev.sh setup
	bash scripts/paper_figures.sh output/paper

clean:
	rm -rf .venv output .pytest_cache
