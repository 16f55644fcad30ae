"""The install's compile runs from a wide frame (``precompile.on_a_wide_stack``):
the call and its result are the function's, and a recursion that goes back
and forth across the end of a chunk of CPython's frame stack, which maps a
new chunk each time it crosses (python/cpython#142183), maps none under it.
Memory mapped and first touched shows as minor page faults."""
import resource

import pytest

from robot_dynamics_ros.dynamics.precompile import on_a_wide_stack


def _down(depth):
    return 0 if depth == 0 else 1 + _down(depth - 1)


def _back_and_forth():
    """Recursions of every depth to 300, 20 times each: frames of some
    hundred bytes, so one of the depths crosses a 16 KiB chunk's end."""
    for depth in range(1, 301):
        for _ in range(20):
            _down(depth)


# this thread's faults alone where the system counts them (Linux), so that
# other threads of the test process do not count
_WHO = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


def _minor_faults(function, *args):
    before = resource.getrusage(_WHO).ru_minflt
    function(*args)
    return resource.getrusage(_WHO).ru_minflt - before


def test_the_call_and_its_result_are_the_function_s():
    assert on_a_wide_stack(divmod, 17, 5) == (3, 2)
    with pytest.raises(ZeroDivisionError):
        on_a_wide_stack(divmod, 1, 0)


def test_a_recursion_across_a_chunk_s_end_maps_no_memory_under_a_wide_frame():
    # first-time work outside the counts: the interpreter's, and the wide frame's function
    _back_and_forth()
    on_a_wide_stack(_back_and_forth)
    plain = _minor_faults(_back_and_forth)
    if plain < 1000:
        pytest.skip(f"this CPython does not map a chunk per crossing ({plain} minor faults): "
                    "nothing for a wide frame to spare")
    wide = _minor_faults(on_a_wide_stack, _back_and_forth)
    assert wide < plain / 10, (wide, plain)
