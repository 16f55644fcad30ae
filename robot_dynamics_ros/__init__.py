"""Live rigid-body dynamics for ROS 2 (the numerics live in ``dynamics``)."""
