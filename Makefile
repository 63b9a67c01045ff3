# The commands behind the README. Everything runs from the virtualenv in .venv.
#
#   make demo                 the example shop on http://127.0.0.1:8000 and its worker
#   make test                 the test suite on SQLite
#   make test DB=postgres     ... on PostgreSQL (DB_HOST, DB_PORT, DB_USER, DB_PASSWORD, DB_NAME)
#   make test DB=mysql        ... on MySQL / MariaDB
#   make test ARGS="-k signal -x"
#   make lint, make docs

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
DB ?= sqlite
ARGS ?=
SHOP_ARGS ?= -q

# mysqlclient compiles against libmysqlclient: install the `mysql` extra only where it can build.
ifeq ($(DB),mysql)
EXTRAS := dev,postgres,mysql
else ifeq ($(shell pkg-config --exists mysqlclient 2>/dev/null && echo yes),yes)
EXTRAS := dev,postgres,mysql
else
EXTRAS := dev,postgres
endif
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: venv test demo lint docs clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || scripts/venv.sh "$(PYTHON)" $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[$(EXTRAS)]"
	@rm -f $(VENV)/.installed-*
	@touch $@

# The package's suite, then the example shop's (its own settings module, so its own run).
test: venv
	DB=$(DB) $(VENV)/bin/pytest $(ARGS)
	cd example_project && DB=$(DB) ../$(VENV)/bin/pytest $(SHOP_ARGS)

demo: venv
	scripts/demo.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy django_workflows

docs: venv
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf docs/_build .pytest_cache .mypy_cache .ruff_cache build *.egg-info
