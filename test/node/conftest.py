"""The node room's shared fixture: one panda node process per module,
Christoffel symbols on (a module that needs another setup overrides
``panda`` with ``panda_node`` and its own arguments)."""

import pytest
from panda_node import panda_node


@pytest.fixture(scope="module")
def panda(tmp_path_factory):
    yield from panda_node(tmp_path_factory, "-p", "publish_christoffel:=true")
