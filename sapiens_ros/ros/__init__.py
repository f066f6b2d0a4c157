"""ROS 2 adapter of the Sapiens2 core: message building, image decoding, nodes."""
