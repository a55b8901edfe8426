"""
The live browser view (``ik_viewer``, issue 35) beside sim_robot + ik_controller (WAM).

* The page, opened in headless Chromium (Debian's ``chromium``; software WebGL), shows
  the robot where its joints are: pixels at the projections of the robot's joint
  origins (the page's own camera) differ from the background, and pixels at the same
  points moved aside into empty space do not (the negative control).
* Dropping a goal gizmo (the server-side callback the gizmo's drag end triggers) sends a
  pose goal the robot's own joint_states then reach (pinocchio FK of the URDF); the
  page's text says the goal is REACHED; its hold button holds the controller.
* A port already taken stops the viewer with one line and exit status 2.

Skipped where no browser exists, except under ``make test`` (``IK_CONTROL_TEST_EVERYTHING
=1``), whose set-up installs it: there a missing browser fails the suite.
"""

import io
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

from ik_control import robots
from ik_control.control.status import Status
from ik_control.ros.harness.node_process import free_port, node_environment
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from std_msgs.msg import UInt32
from test_ik_controller_node import (_errors, _pin_fk, _reachable_targets, Bringup, LATCHED,
                                     STARTUP)

BROWSER = shutil.which('chromium') or shutil.which('chromium-browser')
if BROWSER is None and os.environ.get('IK_CONTROL_TEST_EVERYTHING') == '1':
    pytest.fail("no chromium binary: make test installs Debian's chromium (make browser)",
                pytrace=False)
needs_browser = pytest.mark.skipif(BROWSER is None, reason='no chromium binary on PATH')
WIDTH, HEIGHT = 1280, 800  # the page's viewport [px]
PANEL = 440  # the panel's width on the right of the page [px]
ROBOT_PIXEL = 40  # a channel this far from the background's is the robot's [0-255]


@pytest.fixture(scope='module')
def wam():
    bringup = Bringup('wam', 500.0, ns='/wam_view')
    yield bringup
    bringup.close()


@pytest.fixture(scope='module')
def viewer(wam):
    """Run the viewer node in this process (its callbacks reachable), spun in a thread."""
    from ik_control.ros.viewer_node import ViewerNode

    setup = robots.SETUPS['wam']
    node = ViewerNode(context=wam.ctx.context, namespace=wam.ns, parameter_overrides=[
        Parameter('urdf_path', value=robots.urdf_path('wam')),
        Parameter('base_frame', value=setup.base_frame),
        Parameter('end_effectors', value=list(setup.end_effectors)),
        Parameter('joints', value=list(setup.joints)),
        Parameter('port', value=free_port())])
    executor = SingleThreadedExecutor(context=wam.ctx.context)
    executor.add_node(node)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.05)
                                              for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP
    while node.q is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert node.q is not None, 'the viewer never drew a joint state'
    yield node
    stop.set()
    thread.join(timeout=5.0)
    executor.shutdown()
    node.destroy_node()


def _screenshot(url):
    """Open ``url`` in headless Chromium; return the rendered page (H x W x 3, uint8)."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=[
            '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'])
        try:
            page = browser.new_page(viewport={'width': WIDTH, 'height': HEIGHT})
            page.goto(url)
            page.wait_for_selector('canvas', timeout=30000)
            shots, previous = None, None
            for _ in range(40):  # until two frames 0.5 s apart agree: loaded and drawn
                page.wait_for_timeout(500)
                shots = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert('RGB'))
                if previous is not None and np.array_equal(shots, previous):
                    break
                previous = shots
            return shots
        finally:
            browser.close()


def _project(points, position, look_at, fov):
    """Pixels (u right, v down) of ``points`` seen from the page's camera (z up)."""
    forward = (look_at - position) / np.linalg.norm(look_at - position)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    rel = points - position
    depth = rel @ forward
    f = 0.5 * HEIGHT / np.tan(0.5 * fov)
    u = 0.5 * WIDTH + f * (rel @ right) / depth
    v = 0.5 * HEIGHT - f * (rel @ up) / depth
    return np.stack([u, v], axis=1)


def _robot_pixels(image, pixels, background, half=4):
    """For each pixel, whether the square of side 2 half + 1 around it holds the robot."""
    out = []
    for u, v in np.round(pixels).astype(int):
        patch = image[max(v - half, 0):v + half + 1, max(u - half, 0):u + half + 1]
        out.append(bool(patch.size) and bool(
            np.any(np.abs(patch.astype(int) - background).max(axis=2) > ROBOT_PIXEL)))
    return np.array(out)


@needs_browser
def test_the_page_shows_the_robot_where_its_joints_are(viewer):
    from ik_control.view.scene import default_camera, FOV

    image = _screenshot(viewer.scene.url)
    assert image.shape == (HEIGHT, WIDTH, 3)
    colours, counts = np.unique(image.reshape(-1, 3), axis=0, return_counts=True)
    background = colours[np.argmax(counts)].astype(int)
    scene = viewer.scene
    position, look_at = default_camera(scene.initial_points)
    points = scene.points[2:]  # the joints that move (the first two sit in the base)
    pixels = _project(points, position, look_at, FOV)
    inside = (pixels[:, 0] > 10) & (pixels[:, 0] < WIDTH - PANEL) & (pixels[:, 1] > 10) & (
        pixels[:, 1] < HEIGHT - 10)
    assert inside.sum() >= 4, pixels
    on_robot = _robot_pixels(image, pixels[inside], background)
    assert on_robot.mean() >= 0.75, (pixels[inside], on_robot)
    # negative control: the same points 0.6 m to the side (into empty space) are background
    forward = (look_at - position) / np.linalg.norm(look_at - position)
    aside = np.cross(forward, [0.0, 0.0, 1.0])
    moved = _project(points - 0.6 * aside / np.linalg.norm(aside), position, look_at, FOV)
    visible = (moved[:, 0] > 10) & (moved[:, 0] < WIDTH - PANEL)
    assert visible.sum() >= 3
    assert _robot_pixels(image, moved[visible], background).mean() <= 0.25


def test_a_dropped_gizmo_is_a_goal_the_robot_reaches_and_hold_holds_it(wam, viewer):
    fk = _pin_fk(wam)
    status = wam.ctx.collect(UInt32, f'{wam.ns}/ik_controller/status', LATCHED)
    target = _reachable_targets(wam.model, wam.q(), np.array(
        [0.3, -0.2, 0.2, -0.3, 0.2, 0.3, 0.4]))[0]
    gizmo = viewer.scene.gizmos['tool']
    gizmo.position = target[:3, 3]
    from ik_control.view.scene import _wxyz
    gizmo.wxyz = _wxyz(target)
    sent = viewer.scene.gizmo_dropped('tool')  # what the page calls when the drag ends
    np.testing.assert_allclose(sent, target, atol=1e-9)
    wam.goal['tool'].clear()
    wam.wait_goal('tool', timeout=20.0)
    err_p, err_r = _errors(fk.of_state(wam.states.current(), 'tool'), target)
    assert err_p < 1e-3 and err_r < 1e-2, (err_p, err_r)
    assert wam.ctx.spin_until(lambda: 'tool REACHED' in viewer.scene.text, 5.0), \
        viewer.scene.text
    viewer.scene.press('hold')
    assert wam.ctx.spin_until(lambda: status.last is not None
                              and status.last.data & Status.HOLDING, 5.0)
    assert wam.ctx.spin_until(lambda: 'HOLDING' in viewer.scene.text, 5.0), viewer.scene.text
    viewer.scene.press('resume')
    assert wam.ctx.spin_until(lambda: not status.last.data & Status.HOLDING, 5.0)


def test_a_taken_port_stops_the_viewer_with_one_line():
    setup = robots.SETUPS['wam']
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, '-m', 'ik_control.ros.viewer_node', '--ros-args',
             '-p', f'urdf_path:={robots.urdf_path("wam")}',
             '-p', f'base_frame:={setup.base_frame}',
             '-p', f'end_effectors:=[{", ".join(setup.end_effectors)}]',
             '-p', f'port:={port}'],
            env=node_environment(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f'127.0.0.1:{port}' in lines[0], result.stderr
