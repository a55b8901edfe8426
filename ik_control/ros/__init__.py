"""
ROS 2 layer: nodes, message conversions, parameter handling.

The only package of ik_control that imports rclpy or message types.
"""
