"""The controller's configuration, set by the ROS parameters' dotted names (control/config.py)."""

from ik_control.control.config import ControllerConfig
from ik_control.validation import InputError
import pytest


def test_updated_sets_dotted_names_and_leaves_the_original_unchanged():
    base = ControllerConfig()
    new = base.updated({'fallback.strategy': 'off', 'limits.position_margin': 0.05,
                        'solver.damping': 0.2, 'rate_hz': 1000.0})
    assert (new.fallback.strategy, new.limits.position_margin, new.solver.damping,
            new.rate_hz) == ('off', 0.05, 0.2, 1000.0)
    assert (base.fallback.strategy, base.limits.position_margin, base.solver.damping,
            base.rate_hz) == ('joint', 0.02, 0.01, 500.0)
    assert new.collision is not base.collision  # no group is shared with the original


@pytest.mark.parametrize('name', ['limits.nothing', 'nothing', 'limits', 'obstacle.gain',
                                  'limits.position_margin.x'])
def test_an_unknown_name_is_refused_naming_it(name):
    with pytest.raises(InputError, match=f"no setting '{name}'"):
        ControllerConfig().updated({name: 1.0})


@pytest.mark.parametrize('name, value', [
    ('limits.position_margin', -0.01), ('collision.gain', 0.0), ('goal.unreachable_time', 0.0),
    ('obstacles.link_radius', float('nan')), ('fallback.time_budget', True)])
def test_a_bad_value_is_refused_by_its_dotted_name(name, value):
    with pytest.raises(InputError, match=f'^{name} must be'):
        ControllerConfig().updated({name: value}).validate(7)
