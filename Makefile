# FairGate. A newcomer needs two commands: `make lab EXP=...` (later issues)
# and `make test`; both set up what is missing on first use. `make help`.

P4C      ?= p4c-bm2-ss
SWITCH   ?= simple_switch_grpc
VENV     ?= .venv
PY       := $(VENV)/bin/python
PROGRAMS := forward fairgate
BUILD    := build
TEST     ?=
EXP      ?=
EXT      ?=
ALGO     ?= all
SCALE    ?= lab
# where run records go and where make report reads them (results/<experiment>/<run-id>/)
RESULTS  ?= results
STRICT   ?=
# make report: experiments whose new section replaces the previous one even if it shows less
DROP     ?=
STAMP    := $(VENV)/.fairgate-deps

P4_SOURCES := $(wildcard p4src/*.p4 p4src/include/*.p4)

export P4C SWITCH VENV

.PHONY: help deps build build-tna tna-report test test-unit test-ptf test-mininet lab run sim sim-ext report lint bench clean dashboard

help:
	@echo "FairGate make targets"
	@echo "  make deps          install Debian packages and the pinned Python venv ($(VENV))"
	@echo "  make test          every suite; skips what lacks its tool, prints a summary table"
	@echo "                     [STRICT=1: fail instead of skip, as CI does (FAIRGATE_STRICT=1)]"
	@echo "  make test-unit     unit tests only (no switch, no root)"
	@echo "  make test-ptf      PTF packet tests on simple_switch_grpc [TEST=module.Class]"
	@echo "  make test-mininet  Mininet end-to-end tests"
	@echo "  make build         compile p4src/*.p4 with p4c --Werror into $(BUILD)/ and refresh"
	@echo "                     the committed p4src/compiled/ and p4src/fairgate_p4/generated.py"
	@echo "  make lab EXP=file  run an experiment file (experiments/<name>.toml or a path) on BMv2;"
	@echo "                     results/<experiment>/<run-id>/ (docs/experiments.md) [SCALE=] [ALGO=] [VARIANT=]"
	@echo "  make run EXP=file  the file's network at a mininet> prompt, controller running,"
	@echo "                     host commands fg-send/fg-recv/fg-tcp/fg-cm/fg-status [ALGO=] [PCAP=1]"
	@echo "  make lint          ruff + generated-code check + P4 compile check"
	@echo "  make bench         every benchmark; each writes results/bench/<name>.json"
	@echo "  make sim EXP=file  an experiment file in the packet-level simulator [SCALE=] [ALGO=] [VARIANT=]"
	@echo "                     [EXT=1: the compiled build, see make sim-ext]"
	@echo "  ... DASHBOARD=1    with make sim/lab EXP=file: a live dashboard on 127.0.0.1 (URL printed;"
	@echo "                     docs/dashboard.md) [SPEED=sim s per wall s, 0 = flat out]"
	@echo "  make dashboard RUN=results/<exp>/<run-id|latest>  replay a run in the dashboard"
	@echo "  make report        write docs/results.md from the newest runs and experiments/*.toml [RESULTS=dir, default results]"
	@echo "                     and docs/records/ (the cited records, refreshed); a section whose records are absent is"
	@echo "                     kept and warned about [STRICT=1: fail instead] [DROP=name,...: replace it anyway]"
	@echo "  make sim-ext       compile the simulator's packet path and host cores with mypyc into"
	@echo "                     build/sim-ext/ (optional; scripts/sim_ext.py run -- CMD uses it)"
	@echo "  make build-tna     compile p4src/tna/fairgate_tna.p4 with bf-p4c into build/tna/"
	@echo "                     [TNA_TARGET=tofino|tofino2] [TNA_VARIANT=full (default), no-ficcrd, ficcrd-edge, base, ...]"
	@echo "  make tna-report    compile every TNA variant, write docs/hardware.md's resource section"
	@echo "  make clean         remove $(BUILD)/ and caches (keeps $(VENV) and results/)"
	@echo "Variables: P4C=$(P4C) SWITCH=$(SWITCH) VENV=$(VENV) TEST=..."

# The venv is rebuilt when the pins change.
$(STAMP): requirements.txt pyproject.toml scripts/setup-deps
	scripts/setup-deps

deps:
	scripts/setup-deps

build: $(STAMP)
	@command -v $(P4C) >/dev/null || { echo "make build: $(P4C) not found (see README: P4 toolchain)"; exit 2; }
	@mkdir -p $(BUILD) p4src/compiled
	@$(PY) -m fairgate_p4.xcp_math
	@for prog in $(PROGRAMS); do \
	  echo "p4c --Werror p4src/$$prog.p4"; \
	  $(P4C) --arch v1model --Werror -I p4src -o $(BUILD)/$$prog.json \
	    --p4runtime-files $(BUILD)/$$prog.p4info.txtpb p4src/$$prog.p4 || exit 1; \
	  cp $(BUILD)/$$prog.json $(BUILD)/$$prog.p4info.txtpb p4src/compiled/; \
	  $(PY) -m fairgate_p4.artifacts p4src/compiled/$$prog.json || exit 1; \
	done
	@$(PY) -m fairgate_p4.gen

test: $(STAMP)
	$(PY) scripts/run_tests.py $(if $(STRICT),--strict)

test-unit: $(STAMP)
	$(PY) scripts/run_tests.py --suite unit $(if $(STRICT),--strict)

test-ptf: $(STAMP)
	ptf-tests/run-ptf $(TEST)

test-mininet: $(STAMP)
	$(PY) scripts/run_tests.py --suite mininet $(if $(STRICT),--strict)

# Without BMv2 a lab runs in the packet-level simulator instead, and says so.
# EXP is an experiment file: a path, or a name for experiments/<name>.toml.
# SCALE is passed to the file only when given (a file's first scale is its default).
EXP_FILE  = $(if $(filter %.toml,$(EXP)),$(EXP),experiments/$(EXP).toml)
EXP_SCALE = $(if $(filter command line environment,$(origin SCALE)),--scale $(SCALE))
EXP_OPTS  = $(EXP_SCALE) --algo $(ALGO) $(if $(VARIANT),--variant $(VARIANT)) $(if $(QUIET),--quiet) $(if $(JSON),--json) \
            $(if $(DASHBOARD),--dashboard $(if $(SPEED),--speed $(SPEED))) --results $(RESULTS)
EXP_ARGS  = $(EXP_FILE) $(EXP_OPTS)

lab: $(STAMP)
	@test -n "$(EXP)" || { echo "make lab: say which experiment, e.g. make lab EXP=ring or EXP=path/to/file.toml (docs/experiments.md)"; exit 2; }
	@if command -v $(SWITCH) >/dev/null; then \
	  $(PY) -m fairgate_exp run $(EXP_ARGS) --engine bmv2; \
	else \
	  echo "make lab: $(SWITCH) not found, so this runs in the SIMULATOR, not on BMv2 (README: The P4 toolchain)"; \
	  $(PY) -m fairgate_exp run $(EXP_ARGS) --engine sim; \
	fi

# Interactive lab (BMv2 only): docs/labs.md "First session".
run: $(STAMP)
	@test -n "$(EXP)" || { echo "make run: say which experiment file, e.g. sudo make run EXP=two-bottleneck or EXP=path/to/file.toml"; exit 2; }
	@command -v $(SWITCH) >/dev/null || { echo "make run: $(SWITCH) not found: the interactive lab needs BMv2 (README: The P4 toolchain); make sim runs experiments without it"; exit 2; }
	@$(PY) -m fairgate_topo.interactive --exp $(EXP) --algo $(ALGO) $(EXP_SCALE) $(if $(filter 1 yes true,$(PCAP)),--pcap)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m fairgate_p4.gen --check
	@if command -v $(P4C) >/dev/null; then \
	  for prog in $(PROGRAMS); do \
	    $(P4C) --arch v1model --Werror -I p4src -o /dev/null p4src/$$prog.p4 || exit 1; \
	    echo "p4c --Werror p4src/$$prog.p4: clean"; \
	  done; \
	else echo "lint: $(P4C) not found, P4 compile check skipped (see README: P4 toolchain)"; fi

bench: $(STAMP)
	$(PY) scripts/run_benchmarks.py

sim-ext: $(STAMP)
	$(PY) scripts/sim_ext.py build

sim: $(STAMP)
	@test -n "$(EXP)" || { echo "make sim: give EXP=<file.toml or name> (docs/experiments.md)"; exit 2; }
	$(if $(EXT),$(PY) scripts/sim_ext.py check || $(PY) scripts/sim_ext.py build)
	$(if $(EXT),$(PY) scripts/sim_ext.py run --) $(PY) -m fairgate_exp run $(EXP_ARGS) --engine sim

dashboard: $(STAMP)
	@test -n "$(RUN)" || { echo "make dashboard: give RUN=results/<experiment>/<run-id> (or .../latest)"; exit 2; }
	$(PY) -m fairgate_exp dashboard $(RUN)

report: $(STAMP)
	$(PY) -m fairgate_exp report --results $(RESULTS) --archive docs/records --doc docs/results.md $(if $(STRICT),--strict) $(if $(DROP),--drop $(DROP))

clean:
	rm -rf $(BUILD) .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +

# ---- Tofino (TNA): p4src/tna/fairgate_tna.p4 with p4lang's open-source bf-p4c.
# Outputs under build/tna/<target>/<variant>/ (never committed). docs/hardware.md.
TNA_TARGET  ?= tofino
# Default (TNA_VARIANT empty): tna_resources.DEFAULT_VARIANTS, `full` (every feature,
# both FICCRD roles, in one pipe: docs/hardware.md, "Status").
TNA_VARIANT ?=


build-tna: $(STAMP)
	$(PY) -m fairgate_p4.tna_resources build --target $(TNA_TARGET) $(if $(TNA_VARIANT),--variant $(TNA_VARIANT))

# Compiles every variant (whole program, base, base + each feature) and rewrites
# the measured resource section of docs/hardware.md (about 15 minutes on 2 idle
# cores). TNA_REPORT_ARGS="--variants no-ficcrd ficcrd-core" compiles only those two
# and reads every other row from build/tna's logs (it stops when those are missing or
# older than the P4 source; docs/hardware.md).
tna-report: $(STAMP)
	$(PY) -m fairgate_p4.tna_resources report --target $(TNA_TARGET) $(TNA_REPORT_ARGS)
