"""
Declared ROS parameters from one table per node, and the nodes' common ``main``.

Each entry of a table is a :class:`Param`: default (which fixes the type), description
with units, optional numeric range, and whether it may change at run time. Out-of-range
or wrongly typed values at start-up become a :class:`StartupError` with a one-line
message; ``run_node`` prints it and exits with status 2 instead of a traceback.

A double parameter takes an integer too, as a ROS user expects (``ros2 param set /node
gain 5``): it is declared with dynamic typing and :func:`coerce` converts the value, or
refuses it naming the parameter, the expected type and the range.
"""

from dataclasses import dataclass
import gc
import os
import sys

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
import rclpy
from rclpy.exceptions import (InvalidParameterTypeException, InvalidParameterValueException,
                              ParameterUninitializedException)
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.parameter import Parameter

EXIT_BAD_PARAMETERS = 2


class StartupError(Exception):
    """A user error in a node's parameters or files (reported without a traceback)."""


@dataclass(frozen=True)
class Param:
    """One declared parameter (see module docstring)."""

    default: object
    description: str
    lo: float = None
    hi: float = None
    dynamic: bool = False
    field: str = None  # the configuration field it sets (ik_controller_parameters._setting)
    convert: object = None  # value -> the field's value (None: as declared)


def descriptor(name, param):
    """Return a ParameterDescriptor with the description, range and read-only flag of ``param``."""
    d = ParameterDescriptor(name=name, description=param.description,
                            read_only=not param.dynamic)
    if isinstance(param.default, float):
        d.dynamic_typing = True  # an integer is taken for a double (see coerce)
    if param.lo is not None:
        if isinstance(param.default, int) and not isinstance(param.default, bool):
            d.integer_range = [IntegerRange(from_value=int(param.lo), to_value=int(param.hi),
                                            step=1)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(param.lo),
                                                         to_value=float(param.hi))]
    return d


def declare_all(node, table):
    """
    Declare every parameter of ``table`` on ``node``; returns ``{name: value}``.

    Array parameters default to empty (``Parameter.Type.*_ARRAY`` as default); their value
    is returned as a list.
    """
    values = {}
    for name, param in table.items():
        try:
            declared = node.declare_parameter(name, param.default, descriptor(name, param))
            value = declared.value
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            raise StartupError(f"parameter '{name}': {exc}") from None
        except ParameterUninitializedException:
            value = None
        if isinstance(param.default, Parameter.Type):
            value = list(value or [])
        value, reason = coerce(table, name, value)
        if reason:
            raise StartupError(f"parameter '{name}': {reason}")
        values[name] = value
    return values


def _expected(param):
    kind = {bool: 'a bool', int: 'an integer', float: 'a double (or an integer)',
            str: 'a string'}.get(type(param.default), 'an array')
    if param.lo is not None:
        kind += f' in [{param.lo:g}, {param.hi:g}]'
    return kind


def coerce(table, name, value):
    """
    Return ``(value, reason)``: ``value`` in the type of parameter ``name``, or why not.

    An integer for a double is converted; a value of another type or out of the range
    gives a reason naming the parameter, the expected type and the range.
    """
    param = table[name]
    if isinstance(param.default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value, (f'{name} expects {_expected(param)}, got '
                           f'{type(value).__name__} {value!r}')
        value = float(value)
    return value, in_range(table, name, value)


def in_range(table, name, value):
    """Why ``value`` is not acceptable for ``name`` (empty string if it is)."""
    param = table[name]
    if param.lo is None or isinstance(value, (str, bool, list, tuple)):
        return ''
    if not (param.lo <= value <= param.hi):
        return f'{name} = {value} is outside the range: expected {_expected(param)}'
    return ''


def make_executor(kind):
    """'events' (rclpy.experimental.EventsExecutor) or 'single_threaded'."""
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    if kind == 'single_threaded':
        return SingleThreadedExecutor()
    raise StartupError(f"executor must be 'events' or 'single_threaded', not '{kind}'")


def run_node(name, factory, args=None, executor='single_threaded'):
    """
    Run a node: init rclpy, build it with ``factory()``, spin until shutdown.

    A :class:`StartupError` is printed as one line on stderr and ends the process at once
    with exit status 2 (see :func:`_exit_now`); only a process's entry point calls this. A
    node with a ``spin(executor)`` method runs itself (its own loop); others are spun.
    Returns the exit code.
    """
    try:
        rclpy.init(args=args)
    except RuntimeError as exc:  # rcl's RCLError: arguments it cannot parse
        print(f'[{name}] startup failed: cannot parse the command line arguments: '
              f'{str(exc).strip()}', file=sys.stderr, flush=True)
        return EXIT_BAD_PARAMETERS
    node = None
    try:
        ex = make_executor(executor)
        node = factory()
        ex.add_node(node)
        spin = getattr(node, 'spin', None)
        if spin is None:
            ex.spin()
        else:
            spin(ex)
        return 0
    except StartupError as exc:
        print(f'[{name}] startup failed: {exc}', file=sys.stderr, flush=True)
        _exit_now(EXIT_BAD_PARAMETERS)
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    except Exception:
        if not rclpy.ok():  # SIGINT during start-up shut the context down under it
            return 0
        raise
    finally:
        if node is not None:
            node.destroy_node()
        gc.collect()  # no rcl handle may outlive the context (rclpy segfaults at exit)
        rclpy.try_shutdown()


def _exit_now(code):
    """
    End the process with ``code`` now, without tearing down the half-built node.

    The node whose ``__init__`` raised holds DDS entities created moments before; freeing
    them (``rcl_node_fini``) crashed rclpy in about one start-up failure in several hundred
    (SIGSEGV instead of exit 2, in CI). Nothing is left to save at that point: the one line
    is printed and flushed, and the operating system frees the rest.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
