"""tailorbench.raycluster: the connection a run starts is held by each of its users and ended by the last one;
a connection the process made itself (a notebook's, a benchmark's) is never ended by tailorbench."""

from __future__ import annotations

import pytest

from tailorbench.raycluster import connect, disconnect, import_ray

#: these tests start Ray (tests/conftest.py marks them `ray` and `slow` from it)
pytestmark = pytest.mark.usefixtures("ray_runtime")


def test_the_last_holder_ends_the_connection_and_a_process_connection_stays() -> None:
    ray = import_ray()
    assert not ray.is_initialized()
    assert connect(None) and connect(None)  # two holders of one local Ray (two judges of one run)
    disconnect()
    assert ray.is_initialized()  # the second judge's engines keep their cluster
    disconnect()
    assert not ray.is_initialized()
    disconnect()  # one call too many does nothing
    ray.init(num_cpus=1, include_dashboard=False)
    try:
        assert connect(None) is False
        disconnect()
        assert ray.is_initialized()
    finally:
        ray.shutdown()
