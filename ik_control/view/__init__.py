"""The live browser view of ``ik_control view`` (viser; an optional extra, without rclpy)."""
