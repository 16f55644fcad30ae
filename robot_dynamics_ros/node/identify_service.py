"""``~/identify_payload`` (robot_dynamics_ros/srv/IdentifyPayload): the node's
service that estimates a payload from the joint states it received.

An identification takes seconds (tens of thousands of joint states through
eleven inverse dynamics each), far longer than a joint state may wait. So the service lives on a node and executor of its own
(``_<node>_identify``: hidden, as ``ros2 node list`` leaves out names that
start with an underscore), spun by a thread at the builder's lower priority,
while the node's executor goes on with the joint states; the kernels
release the GIL. The service keeps the node's name, ``~/identify_payload``
resolved by the node itself (its namespace and remappings apply).

The numbers come from ``effort_window`` (no ROS there); this module turns a
request into that call and the estimate into the response, and applies it
through the model service when asked, refused like any payload request.
"""

import os
import threading
from typing import Callable

import numpy as np
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from robot_dynamics_ros.node.effort_window import identify, payload_to_apply
from robot_dynamics_ros.node.model_service import RequestRefused
from robot_dynamics_ros.served.model import Payload
from robot_dynamics_ros.identification.payload import PayloadEstimate
from robot_dynamics_ros.srv import IdentifyPayload

SERVICE = "~/identify_payload"


class IdentifyPayloadServer:
    """``~/identify_payload`` of ``node`` on its own thread.

    ``live()``: the node's current snapshot (``served`` and ``efforts``, the
    EffortWindow, or None); ``request_payload(make, kind)``: the model
    service's, which validates and raises RequestRefused.
    """

    def __init__(self, node: Node, live: Callable[[], object],
                 request_payload: Callable[..., None], niceness: int = 0):
        self._live = live
        self._request_payload = request_payload
        self._niceness = niceness
        # use_global_arguments=False: the process's remappings (launch_ros
        # gives `-r __node:=<name>`) are the node's; applied here too they
        # would give this node the node's name
        self._node = Node(f"_{node.get_name()}_identify", namespace=node.get_namespace(),
                          context=node.context, start_parameter_services=False,
                          use_global_arguments=False)
        self.name = node.resolve_service_name(SERVICE)
        self._node.create_service(IdentifyPayload, self.name, self._on_request)
        self._executor = SingleThreadedExecutor(context=node.context)
        self._executor.add_node(self._node)
        self._stop = threading.Event()
        # stop() wakes the executor with it: a spin with a timeout would wake
        # ten times a second and ask for the GIL while the node computes
        self._wake = self._node.create_guard_condition(lambda: None)
        self._thread = threading.Thread(target=self._spin, name="identify_payload", daemon=True)
        self._thread.start()

    def _spin(self):
        if self._niceness:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._niceness)
        try:
            while not self._stop.is_set() and self._node.context.ok():
                self._executor.spin_once()
        except ExternalShutdownException:
            pass

    def stop(self, timeout: float = 2.0):
        """Stop serving; an identification under way is abandoned with its daemon thread."""
        self._stop.set()
        self._wake.trigger()
        self._thread.join(timeout)
        self._executor.shutdown(timeout_sec=0.1)
        self._node.destroy_node()

    def _on_request(self, request, response):
        response.success = False
        try:
            estimate = self.estimate(request.link, request.window)
        except ValueError as error:
            response.message = f"no estimate: {error}"
            return response
        # anything else is a bug on some data: answered, and the service
        # thread goes on (an exception would end its executor's spin)
        except Exception as error:  # noqa: BLE001
            response.message = f"no estimate: {type(error).__name__}: {error}"
            return response
        fill_response(response, estimate)
        if request.apply:
            response.applied, note = self._apply(estimate)
            response.message += "\n" + note
        return response

    def estimate(self, link: str, window: float) -> PayloadEstimate:
        live = self._live()
        if live is None:
            raise ValueError("no robot model is loaded yet")
        if live.served.base:
            raise ValueError("payload identification needs a fixed base: the base wrench of a "
                             "floating one acts on no joint's effort")
        if live.efforts is None:
            raise ValueError("the window of joint states is off (identify_payload.window_size 0)")
        if not np.isfinite(window) or window < 0:
            raise ValueError(f"window must be a finite number of seconds >= 0, got {window}")
        return identify(live.served.model, live.efforts, link, window)

    def _apply(self, estimate: PayloadEstimate):
        """(applied, what happened): the estimate as ``estimate.link``'s payload."""
        payload = payload_to_apply(estimate)
        if payload is None:
            return False, "not applied: the mass or the centre of mass is not identifiable"
        link, mass, com, inertia = payload
        try:
            self._request_payload(lambda: Payload.create(link, mass, com, inertia), "identify_payload")
        except RequestRefused as error:
            return False, f"not applied: {error}"
        inertia_note = "" if estimate.inertia.identified else " (inertia not identifiable: a point mass)"
        return True, f"applied as the payload of {link}{inertia_note}; ~/model names it in its next revision"


def fill_response(response, estimate: PayloadEstimate):
    """The estimate's numbers and report into an IdentifyPayload response."""
    response.success = True
    response.message = estimate.report()
    response.samples = int(estimate.samples)
    response.condition_number = float(estimate.condition_number)
    response.mass_identified = estimate.mass.identified
    response.com_identified = estimate.com.identified
    response.inertia_identified = estimate.inertia.identified
    inertia = response.inertia
    if estimate.mass.identified:
        inertia.m = float(estimate.mass.value)
        response.mass_half_width = float(estimate.mass.half_width)
    if estimate.com.identified:
        inertia.com.x, inertia.com.y, inertia.com.z = (float(v) for v in estimate.com.value)
        response.com_half_width = np.asarray(estimate.com.half_width, dtype=np.float64)
    if estimate.inertia.identified:
        (inertia.ixx, inertia.ixy, inertia.ixz,
         inertia.iyy, inertia.iyz, inertia.izz) = (float(v) for v in estimate.inertia.value)
        response.inertia_half_width = np.asarray(estimate.inertia.half_width, dtype=np.float64)
