"""Examples of the ROS-free core: SAM's spray painting (``ik_control paint``)."""
