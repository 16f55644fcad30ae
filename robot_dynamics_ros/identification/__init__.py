"""Identification from the efforts a robot reports, without ROS: torque residuals
against inverse dynamics (``residuals``) and a payload's ten inertial
parameters by least squares (``payload``).

Imports only ``dynamics``.
"""
