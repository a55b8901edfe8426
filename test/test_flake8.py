# Copyright 2017 Open Source Robotics Foundation, Inc.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Run ament_flake8 (ROS 2 flake8 settings) over the package."""

import os

from ament_flake8.main import main_with_errors
import pytest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Directories that are not package sources: virtual environments and colcon
# build trees made inside the checkout. ament_flake8 already skips folders that
# start with '.' or '_' (.venv, .git, __pycache__) and folders holding an
# AMENT_IGNORE file.
EXCLUDES = ['build', 'install', 'log', 'venv']


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8(monkeypatch):
    monkeypatch.chdir(PACKAGE_ROOT)
    rc, errors = main_with_errors(argv=['--exclude'] + EXCLUDES)
    assert rc == 0, \
        'Found %d code style errors / warnings:\n' % len(errors) + \
        '\n'.join(errors)
