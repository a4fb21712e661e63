# The lab's front door. Settings are make variables or environment variables:
#   make bench SERVER="grizzly undertow nginx" CONCURRENCY="1 8 32" DURATION=5s
# `make help` lists every setting with its default.

SHELL := /bin/bash
PYTHON ?= python3
LAB := $(PYTHON) -m lab
# Variables given on make's command line reach the scripts' environment as is
# (GNU make exports them), so CONCURRENCY= (empty) is an error, not a default.

# Exit codes (lab/setup/exits.py, `make help`): GNU make ends with 2 whenever a
# recipe fails, whatever the recipe's status, and otherwise only by a signal.
# $(call STEP,command) runs a lab step so that an interrupt (130) still reads
# 130 to make's caller: the recipe interrupts make itself (SIGINT), and make
# ends by that signal once the recipe is gone (the recipe outlives the signal
# by a second: make's handler then reaps it, instead of racing its main loop
# to a wait() with no child and ending with 2). 1 and 3 become make's 2; the
# line "make: *** [...] Error N" names the step's own code.
STEP = status=0; $(1) || status=$$?; if [ $$status -eq 130 ]; then kill -INT $$PPID; sleep 1; fi; exit $$status
# The names given on the command line (rerun: they override the recorded ones):
GIVEN := $(strip $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v))))

.PHONY: help bench calibrate claims compare noise history workshop-check workshop-prepare use cost profile list check-servers build images plots rerun report reproduce test test-fast lint clean distclean

help: ## this help
	@echo "Polyglot REST server comparison lab"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-15s %s\n", $$1, $$2}'
	@echo
	@$(LAB) settings                # generated from lab/setup/params.py (docs/settings.md too)
	@echo
	@$(LAB) exits                   # generated from lab/setup/exits.py (docs/settings.md too)

bench: ## install what is missing, build, verify, sweep, plot (SERVER=...)
	@$(call STEP,LAB_MAKE_PID=$$PPID ./run-benchmark.sh)

calibrate: ## what each installed client drives against nginx here (CLIENTS=, CONCURRENCY=1 8 64, DURATION=5s)
	@$(call STEP,$(LAB) calibrate)

cost: ## instructions per request under cachegrind, a separate start each (COST_LEVELS, COST_REQUESTS, REPEAT=5)
	@$(call STEP,servers=$$($(LAB) cost --check) && if [ -n "$$servers" ]; then \
	  $(LAB) deps $$servers && $(LAB) build $$servers; fi)
	@$(call STEP,$(LAB) cost)

profile: ## CPU profiles and flame graphs of a run's servers at one of its levels: make profile RUN=results/<run-id> PROFILE_AT=8 [DURATION=10s]
	@test -n "$${RUN-}" || { echo "error: give RUN=results/<run-id> PROFILE_AT=<one of its levels>" >&2; exit 2; }
	@$(call STEP,$(LAB) profile "$$RUN")

list: ## servers found from their manifests, built or not
	@$(LAB) list

check-servers: ## each server's checklist before a build: manifest, Maven module / Ada project, inputs, Dockerfile + compose service
	@$(call STEP,$(LAB) check-servers)

build: ## set up toolchains and build SERVER (only what changed)
	@$(call STEP,$(LAB) build)

images: ## RUNTIME=docker: make debian:bullseye and debian:bookworm locally (debootstrap + docker import) unless present
	$(LAB) images

# RUN, A and B reach the recipes through the environment ("$$RUN"), never
# pasted into the shell line: a path with spaces works and a `;` in it is
# part of the path, not a command.
plots: ## redraw the charts of a saved run: make plots RUN=results/<run-id>
	@test -n "$${RUN-}" || { echo "error: give RUN=results/<run-id>" >&2; exit 2; }
	$(LAB) plot "$$RUN"
	@$(LAB) report "$$RUN" >/dev/null

rerun: ## run again with a saved run's settings; settings given here win: make rerun RUN=results/<run-id> [PORT=...]
	@test -n "$${RUN-}" || { echo "error: give RUN=results/<run-id>" >&2; exit 2; }
	@$(call STEP,LAB_GIVEN="$(GIVEN)" $(LAB) rerun "$$RUN")

compare: ## run B against run A, a gate: make compare A=results/<x> B=results/<y> [GATE=rate p99] [MIN_EFFECT=5%] [ALPHA=1%] [FORCE=1], or a paired run's second server against its first: make compare RUN=results/<paired run>; exit 0 no worse, 1 regression (by req/s, or by CPU per request where the host or the client set req/s), 3 nothing decided (the reason is printed)
	@if [ -n "$${RUN-}" ]; then test -z "$${A-}$${B-}" || { echo "error: give RUN=<paired run> or A= and B=, not both" >&2; exit 2; }; \
	  else test -n "$${A-}" -a -n "$${B-}" || { echo "error: give A=results/<x> B=results/<y>, or RUN=results/<paired run>" >&2; exit 2; }; fi
	@$(call STEP,if [ -n "$${RUN-}" ]; then $(LAB) compare "$$RUN"; else $(LAB) compare "$$A" "$$B"; fi)

noise: ## this host's A/A noise: SERVER twice (SERVER and SERVER#2) interleaved in one run; the floor kept for make compare, and how many A/A verdicts said better: make noise SERVER=x [REPEAT=5]
	$(LAB) noise

history: ## a server across the runs in RESULTS, as a table (index.html charts it): make history SERVER=aws
	@$(LAB) history

report: ## summary.md and report.html of a saved run: make report RUN=results/<run-id>
	@test -n "$${RUN-}" || { echo "error: give RUN=results/<run-id>" >&2; exit 2; }
	@$(LAB) report "$$RUN"

reproduce: ## a published study, its client and a second one, claims judged: make reproduce STUDY=ada-vs-java [QUICK=1]
	@$(call STEP,$(LAB) reproduce "$$STUDY")

claims: ## a study's claims judged on runs made earlier, nothing run: make claims STUDY=ada-vs-java RUNS="results/<x> results/<y>"
	@test -n "$${RUNS-}" || { echo 'error: give RUNS="results/<run> ..." (runs made by make bench or make reproduce)' >&2; exit 2; }
	@$(call STEP,$(LAB) claims --study "$$STUDY" $$RUNS)

# The order (unit, fault, real_server) comes from the marks on each test
# (tests/kinds.py); the last lines count every skip and accepted exit 3. Three
# pytest-xdist workers where it is installed (the third waits for the build),
# each test file on one of them; a test that judges measurements runs alone
# (docs/testing.md). The unit and fault tests run in an order shuffled by a
# seed drawn each time, said first and last: TEST_SEED=<it> runs it again.
SHUFFLE_ARGS = --shuffle-seed=$(or $(TEST_SEED),random)
XDIST_ARGS = $(shell $(PYTHON) -c 'import xdist' 2>/dev/null && echo --numprocesses=3 --dist=loadfile)
test: ## the test suite: units, faults (shuffled: TEST_SEED=<the seed said> again), then every server built and swept
	@$(PYTHON) tests/need_pytest.py    # installs python3-pytest as root, else the apt line, exit 2
	SERVER=all $(LAB) deps                      # every server's packages and siege
	SERVER=nginx CLIENT=wrk $(LAB) deps         # wrk (vegeta: its tests build it where Go 1.22+ is)
	$(PYTHON) -m pytest -q -p no:cacheprovider --strict-markers --durations=25 $(SHUFFLE_ARGS) $(XDIST_ARGS) tests

test-fast: ## the unit tests alone (pytest -m unit): no server built, no run under load
	@$(PYTHON) tests/need_pytest.py
	$(PYTHON) -m pytest -q -p no:cacheprovider --strict-markers --durations=10 $(SHUFFLE_ARGS) $(XDIST_ARGS) -m unit tests

workshop-prepare: ## the day before a workshop, with the network: every server, vegeta, the Ada root built, a calibration; ends "ready" or what is missing
	@$(call STEP,$(LAB) workshop-prepare)

use: ## the USE method read off a run: utilisation, saturation, errors of each resource: make use RUN=results/<run-id>
	@test -n "$${RUN-}" || { echo "error: give RUN=results/<run-id>" >&2; exit 2; }
	@$(call STEP,$(LAB) use "$$RUN")

workshop-check: ## the host quiet enough for the lessons (else exit 2, the figure and what to do), then every exercise of docs/workshop.md, short
	@$(call STEP,$(LAB) workshop-host)
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/test_workshop.py

lint: ## shellcheck every script, mypy --strict the lab's Python
	shellcheck .ci/run $$(git ls-files '*.sh')
	$(PYTHON) -m mypy --strict lab

clean: ## remove build outputs (results and the toolchain cache stay)
	rm -rf servers/java/*/target servers/java/target servers/ada/*/obj servers/ada/*/bin

distclean: clean ## also remove the toolchain cache (.cache); results stay
	rm -rf .cache
