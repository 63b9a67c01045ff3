# The commands behind the README. Everything runs from the virtualenv in .venv.
#
#   make demo                 the example shop on http://127.0.0.1:8000 and its worker (PORT=...
#                             another port); installs the package and its runtime dependencies only
#   make test                 the test suite on SQLite
#   make test DB=postgres     ... on PostgreSQL (DB_HOST, DB_PORT, DB_USER, DB_PASSWORD, DB_NAME)
#   make test DB=mysql        ... on MySQL / MariaDB
#   make test ARGS="-k signal -x"
#   make test DJANGO=4.2      ... on another Django, from a virtualenv of its own (.venv-django4.2)
#   make lint, make docs

DB ?= sqlite
ARGS ?=
# DJANGO=4.2 / 5.2 / 6.0 / 6.1: the same commands in .venv-django<version>, with the newest
# patch release of that Django (~=<version>.0). Its Python (scripts/find-python.sh looks on PATH
# and in pyenv; PYTHON=... chooses another when the venv is made) is picked so that the three
# venvs CI uses cover every supported Python: .venv has 3.11 (Django 5.2), Django 4.2 gets 3.12
# (the newest it supports) and Django 6 gets 3.13 (it needs 3.12 or later). Django before 6 also
# gets the `tasks` extra (the django-tasks backport; pip only warns if a checkout lacks it).
DJANGO ?=
ifeq ($(DJANGO),)
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
else
VENV := .venv-django$(DJANGO)
PIN := "Django~=$(DJANGO).0"
ifeq ($(firstword $(subst ., ,$(DJANGO))),6)
PYTHON ?= $(shell scripts/find-python.sh 3.13 3.12)
else
PYTHON ?= $(shell scripts/find-python.sh 3.12 3.11)
EXTRA_TASKS := ,tasks
endif
endif
SHOP_ARGS ?= -q

# mysqlclient compiles against libmysqlclient: install the `mysql` extra only where it can build.
ifeq ($(DB),mysql)
EXTRAS := dev,postgres,mysql
else ifeq ($(shell pkg-config --exists mysqlclient 2>/dev/null && echo yes),yes)
EXTRAS := dev,postgres,mysql
else
EXTRAS := dev,postgres
endif
EXTRAS := $(EXTRAS)$(EXTRA_TASKS)
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))$(if $(DJANGO),-django$(DJANGO))

# make demo installs the package and its runtime dependencies (with the driver of DB, on a
# server), none of the dev extra's tools. An install stamp newer than pyproject.toml that names
# that driver (any stamp, on SQLite) means the venv has what the demo needs.
DEMO_DRIVER := $(filter postgres mysql,$(DB))
PORT ?= 8000

.PHONY: venv demo-venv test demo lint docs clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || scripts/venv.sh "$(PYTHON)" $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[$(EXTRAS)]" $(PIN)
	@rm -f $(VENV)/.installed-*
	@touch $@

demo-venv:
	@if [ -z "$$(find $(VENV) -maxdepth 1 -name '.installed-*$(DEMO_DRIVER)*' -newer pyproject.toml 2>/dev/null)" ]; then \
		set -e; \
		test -x $(VENV)/bin/python || scripts/venv.sh "$(PYTHON)" $(VENV); \
		$(VENV)/bin/python -m pip install --quiet --upgrade pip; \
		echo "$(VENV)/bin/python -m pip install -e .$(if $(DEMO_DRIVER),[$(DEMO_DRIVER)]) $(PIN)"; \
		$(VENV)/bin/python -m pip install --quiet -e ".$(if $(DEMO_DRIVER),[$(DEMO_DRIVER)])" $(PIN); \
		touch $(VENV)/.installed-runtime$(if $(DEMO_DRIVER),-$(DEMO_DRIVER)); \
	fi

# The package's suite, then the example shop's (its own settings module, so its own run).
test: venv
	DB=$(DB) $(VENV)/bin/pytest $(ARGS)
	cd example_project && DB=$(DB) ../$(VENV)/bin/pytest $(SHOP_ARGS)

demo: demo-venv
	DB=$(DB) PORT=$(PORT) $(if $(DJANGO),VENV=$(VENV)) scripts/demo.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy django_workflows

docs: venv
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf docs/_build .pytest_cache .mypy_cache .ruff_cache build *.egg-info
