"""Identification from measured efforts, without ROS: torque residuals
against inverse dynamics (``residuals``) and a payload's ten inertial
parameters by least squares (``payload``).

Imports only ``dynamics``.
"""
