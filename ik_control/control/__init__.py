"""The resolved-motion-rate controller (ROS-free): limits, status codes and the tick."""
