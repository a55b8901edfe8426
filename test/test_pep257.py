# Copyright 2015 Open Source Robotics Foundation, Inc.
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

"""Run ament_pep257 (ROS 2 docstring conventions) over the package."""

import os

from ament_pep257.main import main
import pytest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257(monkeypatch):
    # pydocstyle already skips folders starting with '.' or '_' (.venv, .git).
    monkeypatch.chdir(PACKAGE_ROOT)
    rc = main(argv=['.', 'test', '--exclude', 'build', 'install', 'log', 'venv'])
    assert rc == 0, 'Found code style errors / warnings'
