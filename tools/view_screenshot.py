"""
Screenshot the live browser view mid-motion: the figure of docs/view.md.

Starts sim_robot, ik_controller and ik_viewer for a bundled robot (as ``ik_control demo
--view`` does), publishes an obstacle beside the arm and a pose goal for every end
effector, and while the arm moves takes the page in headless Chromium::

    python tools/view_screenshot.py wam docs/view_wam.png
    python tools/view_screenshot.py simon docs/view_simon.png
"""

import io
import shutil
import sys
import time

from ik_control import robots
from ik_control.ros.harness.demo_nodes import NAMESPACE, Recorder, start_nodes, start_viewer
from ik_control.ros.harness.node_process import node_environment
import numpy as np

PORT = 8097
#: per robot: the joint offsets from the ready pose of each effector's goal [rad], and the
#: obstacle (a sphere: centre [m] in the base frame, diameter [m])
SCENES = {
    'wam': ([0.9, -0.3, 0.3, -0.6, 0.2, 0.3, 0.4], ([0.3, -0.4, 0.8], 0.16)),
    'simon': ([0.0, 0.1, -0.6, 0.5, 0.0, -0.5, 0.0, 0.0, 0.0, -0.6, 0.5, 0.0, -0.5, 0.0, 0.0, 0.0],
              ([0.55, 0.0, 0.85], 0.12)),
}


def main(robot, out):
    """Run the nodes, send the scene's goals and obstacle, write the page to ``out``."""
    from playwright.sync_api import sync_playwright
    from PIL import Image
    from visualization_msgs.msg import Marker, MarkerArray

    offset, (centre, diameter) = SCENES[robot]
    env = node_environment()
    processes = list(start_nodes(robot, 'kinematic', env)) + [start_viewer(robot, PORT, env)]
    model = robots.robot(robot)
    rec = Recorder(model, processes)
    try:
        rec.wait_ready(120.0)
        obstacles = rec.node.create_publisher(MarkerArray, f'{NAMESPACE}/ik_controller/obstacles',
                                              10)
        marker = Marker(ns='view', id=0, type=Marker.SPHERE, action=Marker.ADD)
        marker.header.frame_id = model.base_frame
        marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = centre
        marker.pose.orientation.w = 1.0
        marker.scale.x = marker.scale.y = marker.scale.z = diameter
        marker.color.r, marker.color.a = 1.0, 1.0
        rec.spin_until(lambda: obstacles.get_subscription_count() > 0, 10.0)
        obstacles.publish(MarkerArray(markers=[marker]))
        goals = model.frame_placements(np.array(robots.ready_pose(robot)) + np.array(offset))
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=shutil.which('chromium'),
                args=['--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'])
            page = browser.new_page(viewport={'width': 1280, 'height': 800})
            page.goto(f'http://127.0.0.1:{PORT}/')
            page.wait_for_selector('canvas', timeout=30000)
            rec.spin_for(3.0)
            for ee, T in zip(model.end_effector_names, goals):
                rec.send_pose(ee, T)
            rec.spin_for(0.4 if robot == 'wam' else 0.1)  # mid-motion (SIMON is quicker)
            shot = page.screenshot()
            browser.close()
        Image.open(io.BytesIO(shot)).convert('RGB').save(out)
        print(f'wrote {out}')
    finally:
        rec.close()
        for proc in reversed(processes):
            proc.stop()
        time.sleep(0.2)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
