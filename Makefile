# ik_control without a ROS installation: a virtual environment from PyPI
# wheels (ROS 2 Kilted rclpy and messages, pinocchio, MuJoCo, ...).
#
#   make venv          .venv with requirements.txt, ik_control (editable) and the
#                      ik_control_interfaces actions (built with CMake and a C compiler)
#   make demo          the demo (builds the venv first)
#   make test          the test suite, on a fresh ROS_DOMAIN_ID (installs Debian's chromium
#                      for the browser view's tests where missing, as root)
#   make bench         the benchmarks
#   make colcon-check  colcon build of this package in a scratch workspace
#   make clean         remove the venv and build/test leftovers
#
# ROS 2 wheels exist for Python 3.10, 3.11 and 3.12: pick one with
# `make venv PYTHON=python3.12`.

PYTHON ?= python3
VENV ?= .venv
VENV_PY := $(VENV)/bin/python
STAMP := $(VENV)/.ik_control-installed
IFACE_STAMP := $(VENV)/.ik_control_interfaces-installed
IFACE_SRC := ik_control_interfaces
IFACE_BUILD := $(VENV)/.build/ik_control_interfaces
IFACE_FILES := $(wildcard $(IFACE_SRC)/action/*.action $(IFACE_SRC)/cmake/*.cmake) \
	$(IFACE_SRC)/CMakeLists.txt $(IFACE_SRC)/package.xml
PYTEST_ARGS ?=
UV_VERSION ?= 0.13.8
BENCHES ?= buss step

# Tests must not meet DDS traffic of other runs or of leftover nodes: every
# `make test` draws its own ROS_DOMAIN_ID (1..100) unless one is chosen with
# `make test TEST_DOMAIN_ID=42`, and DDS discovery stays on this host.
TEST_DOMAIN_ID ?=
ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export ROS_AUTOMATIC_DISCOVERY_RANGE

.PHONY: venv browser demo test bench colcon-check clean

venv: $(STAMP) $(IFACE_STAMP)

$(STAMP): requirements.txt setup.py setup.cfg package.xml
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; \
	  sys.exit(0 if (3, 10) <= v <= (3, 12) else \
	  "ik_control: ROS 2 wheels need Python 3.10-3.12, %s is %d.%d; use make PYTHON=python3.X" \
	  % (sys.executable, *v))'
	test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --upgrade pip
	@# uv installs the pinned wheels in seconds (pip takes minutes on a bare machine); the
	@# same versions either way. pip does it where uv cannot be had or fails.
	if $(VENV_PY) -m pip install -q uv==$(UV_VERSION); then \
	  $(VENV)/bin/uv pip install --python $(VENV_PY) --compile-bytecode -r requirements.txt \
	  || $(VENV_PY) -m pip install -r requirements.txt; \
	else $(VENV_PY) -m pip install -r requirements.txt; fi
	$(VENV_PY) -m pip install --no-deps --no-build-isolation -e .
	@# keep colcon and the ament linters out of the venv
	touch $(VENV)/COLCON_IGNORE $(VENV)/AMENT_IGNORE
	touch $@

# The interface package (actions), built by rosidl's generators from the PyPI wheels
# and installed into the venv's prefix (its lib/ is on the library path of every
# Python started there): about 10 s on an idle 2-core machine, a minute under load.
$(IFACE_STAMP): $(STAMP) $(IFACE_FILES)
	@missing=""; \
	command -v cmake >/dev/null || missing="$$missing, CMake (cmake >= 3.19)"; \
	command -v $${CC:-cc} >/dev/null || missing="$$missing, a C compiler ($${CC:-cc})"; \
	command -v $${CXX:-c++} >/dev/null || missing="$$missing, a C++ compiler ($${CXX:-c++})"; \
	$(VENV_PY) -c 'import os, sys, sysconfig; \
	  sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
	  || missing="$$missing, the Python headers (Python.h of $(PYTHON))"; \
	if [ -n "$$missing" ]; then \
	  echo "ik_control: building ik_control_interfaces (the actions) needs $${missing#, }" \
	    "(Debian/Ubuntu: sudo apt-get install cmake build-essential python3-dev)" >&2; exit 1; fi
	rm -rf $(IFACE_BUILD)
	PATH="$(abspath $(VENV))/bin:$$PATH" AMENT_PREFIX_PATH="$(abspath $(VENV))" \
	  cmake -S $(IFACE_SRC) -B $(IFACE_BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DBUILD_TESTING=OFF -DCMAKE_PREFIX_PATH="$(abspath $(VENV))" \
	  -DCMAKE_INSTALL_PREFIX="$(abspath $(VENV))" -DPython3_EXECUTABLE="$(abspath $(VENV_PY))" \
	  --log-level=WARNING
	PATH="$(abspath $(VENV))/bin:$$PATH" AMENT_PREFIX_PATH="$(abspath $(VENV))" \
	  cmake --build $(IFACE_BUILD) --parallel
	cmake --install $(IFACE_BUILD) > /dev/null
	$(VENV_PY) -c 'from ik_control_interfaces.action import MoveToPose'
	touch $@

# Both robots even if the first reports a problem (the exit status says if either did);
# Ctrl-C (exit status 130) stops at once.
demo: venv
	@status=0; for robot in wam simon; do \
	  $(VENV)/bin/ik_control demo --robot $$robot; s=$$?; \
	  if [ $$s -ge 128 ]; then exit $$s; elif [ $$s -ne 0 ]; then status=$$s; fi; \
	done; exit $$status

# The browser view's tests (test/test_viewer_nodes.py) open its page in Debian's chromium:
# installed here when missing and this is root with apt-get (a CI machine), else named.
browser:
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "ik_control: installing Debian's chromium for the browser view's tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
	      > /dev/null || exit 1; \
	  else \
	    echo "ik_control: the browser view's tests need chromium" \
	      "(Debian/Ubuntu: sudo apt-get install chromium)" >&2; exit 1; \
	  fi; \
	fi

# Two runs at once. The node tests (marker `nodes`, test/conftest.py), whose real-time loops
# are judged by the robot's own clock, run on NODE_WORKERS, alone by default: they use
# about 1.1 of this 2-core machine's cores, and with two node modules at once (each
# module's tests on one worker, --dist loadfile, each worker on a ROS domain of its own) 2
# of 8 fresh-clone runs failed timing bounds under the other worker's load. Beside them
# the tests that start no node run on TEST_WORKERS pytest-xdist workers at nice 19: they
# take the CPU the node tests leave and yield it to them at once (a niced process weighs
# 1/68 of a normal one in the scheduler). Nothing in them is timed, and a time budget
# whose outcome one asserts counts CPU time or cannot bind (a planner's node limit, a
# solve that returns at its solution), since a niced test can wait seconds for a core.
# Their report goes to QUICK_LOG and is printed when both are done. The exit status says
# if either failed (5, nothing selected, is not a failure). QUICK_NICE=0 runs them at
# normal priority.
TEST_WORKERS ?= 2
NODE_WORKERS ?= 1
QUICK_NICE ?= 19
QUICK_LOG ?= .pytest_cache/quick.log
test: venv browser
	@ROS_DOMAIN_ID=$(or $(TEST_DOMAIN_ID),$$(( $$(od -An -N2 -tu2 /dev/urandom) % 100 + 1 ))); \
	export ROS_DOMAIN_ID IK_CONTROL_TEST_EVERYTHING=1; \
	echo "ROS_DOMAIN_ID=$$ROS_DOMAIN_ID"; status=0; mkdir -p $(dir $(QUICK_LOG)); \
	echo "the tests that start no node run beside the node tests (report at the end," \
	  "meanwhile in $(QUICK_LOG))"; \
	nice -n $(QUICK_NICE) $(VENV_PY) -m pytest -q -n $(TEST_WORKERS) -m "not nodes" \
	  -o cache_dir=.pytest_cache/quick test $(PYTEST_ARGS) > $(QUICK_LOG) 2>&1 & quick=$$!; \
	trap 'kill $$quick 2>/dev/null' INT TERM; \
	if [ $(NODE_WORKERS) -gt 1 ]; then nodes="-n $(NODE_WORKERS) --dist loadfile"; fi; \
	$(VENV_PY) -m pytest -q $$nodes -m nodes test $(PYTEST_ARGS); s=$$?; \
	if [ $$s -ne 0 ] && [ $$s -ne 5 ]; then status=$$s; fi; \
	wait $$quick; s=$$?; \
	echo; echo "the tests that start no node ($(QUICK_LOG)):"; cat $(QUICK_LOG); \
	if [ $$s -ne 0 ] && [ $$s -ne 5 ]; then status=$$s; fi; \
	exit $$status

bench: venv
	for b in $(BENCHES); do $(VENV)/bin/ik_control bench $$b || exit 1; done

# colcon build of this package in a scratch workspace, with and without
# --symlink-install, and a check of the install tree (also part of `make test`).
colcon-check: venv
	$(VENV_PY) -m pytest -q test/test_colcon_build.py

clean:
	rm -rf $(VENV) build install log bench_results .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
