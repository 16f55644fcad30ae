"""``~/model``: what the node says about each served model, and where its
K_c interval comes from (a certificate file, or the background refinement).

ROS enters only through the ``publish`` and ``now`` callables the node hands
in, so the rule below is plain Python: one DynamicsModel per revision and
K_c interval, and never an older revision after a newer one (the topic is
transient local: a late subscriber gets the last message sent).
"""

import threading
from typing import Callable

from robot_dynamics_ros.dynamics.kc.certificate import CertificateError, serve_certificate
from robot_dynamics_ros.messages.outputs import model_message
from robot_dynamics_ros.node.kc_refinement import KcRefiner
from robot_dynamics_ros.node.status import kc_source


class ModelTopic:
    """``publish(message)`` sends a DynamicsModel, ``now()`` gives its
    stamp; ``report(text)`` and ``info(text)`` log. Called from the builder
    thread (a new model) and the executor (an interval that tightened)."""

    def __init__(self, *, refiner: KcRefiner, certificates: str, publish: Callable, now: Callable,
                 report: Callable[[str], None], info: Callable[[str], None]):
        self._refiner = refiner
        self._certificates = certificates  # the kc_certificate parameter: a file, a folder or ""
        self._publish, self._now = publish, now
        self._report, self._info = report, info
        self._published = None  # (revision, K_c interval, source) last sent
        self._lock = threading.Lock()

    def certificate(self, model) -> str:
        """The path of the certificate that serves ``model``'s K_c interval,
        or "" (its first bound; a file made for another model is refused
        with the reason)."""
        location = self._certificates
        if not location:
            return ""
        try:
            certificate = serve_certificate(model, location)
        except (CertificateError, OSError) as error:
            self._report(f"K_c certificate {location} not served: {error}")
            return ""
        if certificate is None:
            self._info(f"no K_c certificate for this model in {location}: its first "
                       "guaranteed bound serves (robot_dynamics_certify makes one)")
            return ""
        return str(certificate.path)

    def update(self, live):
        """Publish ``live``'s DynamicsModel when its revision or K_c interval changed."""
        model = live.served.model
        interval = self._refiner.refinement(model).interval
        source = "certificate" if live.certificate else kc_source(self._refiner.status(model))
        key = (live.revision, interval.lower, interval.upper, source)
        with self._lock:
            if self._published is not None and key[0] < self._published[0] or key == self._published:
                return
            self._published = key
            self._publish(model_message(live.served, live.revision, (interval.lower, interval.upper),
                                        source, live.certificate, stamp=self._now()))
