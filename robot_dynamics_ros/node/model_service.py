"""What the node serves, and every request to change it, without ROS.

Three kinds of request change what the node serves: a new robot description,
a set of the run-time parameters (``publish_christoffel``, ``payload.*``) and a
payload message. Each request is validated whole against the served model
before anything changes, then applied in one step: a refused request leaves
every parameter, payload and output as it was. The node only converts its
messages into these calls.

Threading contract:

- Requests arrive on any thread (the node's executor); they are queued under
  one lock, and later requests for the same thing replace earlier ones.
- One builder thread turns the newest requests into a complete snapshot:
  description parsed, payloads applied, and ``prepare`` run on it (the node
  computes every output once there, so compilation and the per-model K_c
  never land on the hot path).
- The snapshot is swapped in by one reference assignment to ``live``: a
  reader that takes ``live`` once per input gets every output from one model.
- The snapshot it replaced is freed by a collection on the builder thread
  right after the swap (at the next swap if a reader still held it then):
  memory stays flat over any number of swaps.
"""

import gc
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping, Optional

from robot_dynamics_ros.dynamics.model.model import replace_payload
from robot_dynamics_ros.node.parameters import RUNTIME as RUNTIME_PARAMETERS
from robot_dynamics_ros.served.model import Payload, ServedModel, load_description

PAYLOAD_PARAMETERS = ("payload.link", "payload.mass", "payload.com", "payload.inertia")


@dataclass(frozen=True)
class Snapshot:
    """The least a snapshot holds; the node's adds what its hot path needs."""

    served: ServedModel


class RequestRefused(ValueError):
    """A request that changed nothing; ``kind`` is a short key for counting."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


def _names_no_payload(parameters: Mapping) -> bool:
    """True for the payload parameters' defaults: no link and mass 0."""
    return not parameters["payload.link"] and parameters["payload.mass"] == 0.0


class ModelService:
    """The served snapshot (``live``), the run-time parameters and the builder thread.

    ``prepare(served, previous)`` makes the snapshot of a ``ServedModel``
    (a ``Snapshot`` or any object with its ``served``; ``previous`` is the snapshot it
    replaces, or None); it runs on the builder thread and may raise, which
    keeps the previous snapshot. ``report(text)`` receives every refusal and
    failure as a sentence; ``installed(live)`` is called after each swap.
    """

    def __init__(self, *, parameters: Mapping, gravity=(0.0, 0.0, -9.81), mimic="independent",
                 base="auto", joints=(), frames=(), prepare: Callable = lambda served, previous: Snapshot(served),
                 report: Callable[[str], None] = lambda text: None,
                 installed: Callable = lambda live: None, niceness: int = 0):
        # checked with each description it builds (load_urdf): a bad value is
        # then a refusal the node reports, as a bad mimic or base, not a crash
        self._gravity = gravity
        self._mimic = mimic
        self._base = base
        self._joints = tuple(joints or ())
        self._frames = tuple(frames or ())  # checked with each description, as joints
        self._prepare = prepare
        self._report_to = report
        self._installed = installed
        self._niceness = niceness
        self.live = None
        self.parameters = MappingProxyType({name: parameters[name] for name in RUNTIME_PARAMETERS})
        self.refused = Counter()  # kind -> requests refused or dropped
        # Builder input, guarded by the condition _requests.
        self._requests = threading.Condition()
        self._requested_description = None  # (origin, load) not built yet
        self._requested_payloads = {}  # link -> Payload
        self._requested_version = 0
        self._served_version = 0
        self._stopping = False
        self._builder = threading.Thread(target=self._build_loop, name="model_builder", daemon=True)
        if not _names_no_payload(self.parameters):  # the payload of the parameters given at start
            try:
                self._queue(payload=Payload.create(*(self.parameters[name] for name in PAYLOAD_PARAMETERS)))
            except (ValueError, TypeError) as error:
                self._refuse("payload_parameters", f"initial payload parameters not applied: {error}")

    @property
    def update_pending(self) -> bool:
        """True while an accepted request is not yet served."""
        return self._requested_version != self._served_version

    def start(self):
        self._builder.start()

    def stop(self, timeout: float = 5.0):
        with self._requests:
            self._stopping = True
            self._requests.notify()
        if self._builder.is_alive():
            self._builder.join(timeout)

    # Requests (any thread)

    def request_description(self, origin: str, load: Callable[[], str]):
        """Serve the description ``load()`` returns; checked on the builder thread
        (parsing a large one must not hold up the caller), refused there with
        the last good model kept."""
        self._queue(description=(origin, load))

    def set_parameters(self, changes: Mapping):
        """Apply a set of run-time parameters, all or none.

        Names other than RUNTIME_PARAMETERS are ignored (the node's read-only
        parameters are refused by rclpy itself). Raises RequestRefused, with
        nothing changed, when the payload they describe is invalid for the
        served model.
        """
        changes = {name: value for name, value in changes.items() if name in RUNTIME_PARAMETERS}
        with self._requests:  # one request at a time: each validates against the last
            merged = {**self.parameters, **changes}
            payload = None
            # link "" and mass 0, the defaults, name no payload: a fresh node's
            # parameters set back change nothing (they were refused as no link)
            if any(name in changes for name in PAYLOAD_PARAMETERS) and not _names_no_payload(merged):
                payload = self._checked_payload(
                    "payload_parameters",
                    lambda: Payload.create(*(merged[name] for name in PAYLOAD_PARAMETERS)))
            self.parameters = MappingProxyType(merged)
            if payload is not None:
                self._queue(payload=payload)

    def request_payload(self, make: Callable[[], Payload], kind: str = "payload_topic"):
        """Serve the payload ``make()`` returns, as a payload message or
        ``~/identify_payload`` asks (it replaces the payload on its link; mass
        0 removes it). Raises RequestRefused, counted under ``kind``."""
        self._queue(payload=self._checked_payload(kind, make))

    def _checked_payload(self, kind: str, make: Callable[[], Payload]) -> Payload:
        live = self.live
        try:
            if live is None:
                raise ValueError("no robot model is loaded yet to check the payload against")
            payload = make()
            live.served.with_payload(payload)
        # ``make`` converts a message or parameters the caller got: whatever
        # it raises (a KeyError for a missing field, an OverflowError for
        # 10**400) is a bad request, refused with nothing changed.
        except Exception as error:  # noqa: BLE001
            reason = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
            self._refuse(kind, f"payload refused ({kind}): {reason}")
            raise RequestRefused(kind, reason) from error
        return payload

    def _queue(self, description=None, payload: Optional[Payload] = None):
        with self._requests:
            payloads = self._requested_payloads
            if payload is not None:
                payloads = replace_payload(payloads, payload.link, payload.mass, payload)
            if description is None and payloads == self._requested_payloads:
                return  # nothing changes: spare the builder a model (and its K_c)
            if description is not None:
                self._requested_description = description
            self._requested_payloads = payloads
            self._requested_version += 1
            self._requests.notify()

    def _refuse(self, kind: str, text: str):
        self.refused[kind] += 1
        self._report_to(text)

    # Builder thread

    def _build_loop(self):
        """Serve what was last requested, one complete snapshot at a time;
        requests arriving meanwhile are folded into the next round."""
        if self._niceness and sys.platform == "linux":
            # Linux threads inherit it, so the batch threads started from here run below too.
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._niceness)
        base = origin = built = None
        while True:
            with self._requests:
                self._requests.wait_for(lambda: self._stopping or self.update_pending)
                if self._stopping:
                    return
                version = self._requested_version
                description, self._requested_description = self._requested_description, None
                payloads = list(self._requested_payloads.values())
            if description is not None:
                loaded = self._load(*description)
                if loaded is not None:
                    base, origin, built = loaded, description[0], None
            # A rejected description with the same payloads changes nothing.
            if base is not None and payloads != built:
                built = payloads
                self._serve(self._apply_payloads(base, payloads), origin)
            self._served_version = version

    def _serve(self, served: ServedModel, origin: str):
        """Prepare the snapshot of ``served`` and swap it in. The snapshot it
        replaces is collected right away: its model sits in reference cycles
        (the K_c refinement in its cache holds it, and its resumable search
        the refinement) that only the cyclic collector frees, and Python's
        full collections come seldom; collected here, each replaced model's
        memory goes to the next one, and the node's memory stays flat."""
        try:
            live = self._prepare(served, self.live)
        # A model the numerics fail on must not end the builder thread.
        except Exception as error:  # noqa: BLE001
            self._refuse("model_failed", f"model from {origin} not served: {type(error).__name__}: {error}")
            return
        self.live = live
        del live, served
        gc.collect()
        self._installed(self.live)

    def _load(self, origin: str, load: Callable[[], str]) -> Optional[ServedModel]:
        try:
            return load_description(load(), gravity=self._gravity, mimic=self._mimic,
                                    base=self._base, joints=self._joints, frames=self._frames)
        # Whatever a broken description raises, the last good model stays.
        except Exception as error:  # noqa: BLE001
            self._refuse("description", f"rejected robot description from {origin}: {error}")
            return None

    def _apply_payloads(self, served: ServedModel, payloads) -> ServedModel:
        for payload in payloads:
            try:
                served = served.with_payload(payload)
            except ValueError as error:
                # Checked against the previous robot when requested: forget it.
                self._refuse("payload_dropped",
                             f"payload on {payload.link!r} dropped for this robot: {error}")
                with self._requests:
                    if self._requested_payloads.get(payload.link) == payload:
                        self._requested_payloads = replace_payload(
                            self._requested_payloads, payload.link, 0.0, None)
        return served
