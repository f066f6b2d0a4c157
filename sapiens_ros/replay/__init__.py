"""Offline rosbag2 replay: every camera frame of a bag through the pipeline, no frame lost."""
