"""
sapiens_ros: Meta Sapiens2 human perception for ROS 2.

The inference core lives in :mod:`sapiens_ros.core` and never imports rclpy; the ROS 2 layer is a
thin adapter around it.
"""

__version__ = '0.1.0'
