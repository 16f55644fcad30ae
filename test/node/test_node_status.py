"""The node's counters and throttles, without ROS."""
from robot_dynamics_ros.node.status import Throttle


def test_a_throttle_lets_the_first_event_through_then_one_per_period():
    throttle = Throttle(5.0)
    assert throttle.due(100.0)
    assert not throttle.due(100.0)
    assert not throttle.due(104.999)
    assert throttle.due(105.0)  # the period counts from the last event let through
    assert not throttle.due(109.9)
    assert throttle.due(300.0)
    assert not throttle.due(300.1)
