# Copyright 2026 sapiens_ros contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
One parameter table: the launch file, the node and the shipped defaults all agree with it.

``node_params.PARAMS`` is the only place a parameter is stated: these tests read the real
launch description, the real node's declarations and config/perception.yaml and hold each
against the table, so a row added there needs no second edit to stay consistent.
"""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip('rcl_interfaces.msg')

from sapiens_ros.core.models.registry import PERCEPTION_TASKS  # noqa: E402
from sapiens_ros.core.pipeline.budget import MAX_RATE_HZ, rate_error  # noqa: E402
from sapiens_ros.ros.launch_support import launch_text, parameter_overrides  # noqa: E402
from sapiens_ros.ros.node_params import (checked, OPTION_OBJECTS, PARAM_BY_NAME,  # noqa: E402
                                         PARAMS, routed)

ROOT = Path(__file__).resolve().parents[1]


def _launch_arguments() -> tuple[object, dict]:
    """Load launch/perception.launch.py and return it and its declared arguments by name."""
    pytest.importorskip('launch_ros', reason='launch_ros has no wheel: run bash scripts/setup.sh '
                        'beside shared/ros-tools, or source a ROS 2 install')
    spec = importlib.util.spec_from_file_location('perception_launch',
                                                  ROOT / 'launch' / 'perception.launch.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.get_package_share_directory = lambda package: str(ROOT)  # no colcon install needed
    description = module.generate_launch_description()
    return module, {a.name: a for a in description.get_launch_arguments()}


def _default(argument) -> str:
    return ''.join(s.text for s in argument.default_value)


def test_every_parameter_is_a_launch_argument_of_its_type_or_node_only():
    module, arguments = _launch_arguments()
    launch_only = {name for name, _, _ in module.LAUNCH_ONLY}
    for spec in PARAMS:
        if spec.launch_name is None:  # node-only: no argument pretends to set it
            assert spec.name not in arguments, spec.name
            continue
        argument = arguments[spec.launch_name]
        assert _default(argument) == '', spec.name  # left out: the params_file value stays
        assert spec.description in argument.description, spec.name
        assert launch_text(spec.default) in argument.description, spec.name
        # the argument's text becomes the parameter's own type and value (empty: not given)
        given = parameter_overrides({spec.launch_name: launch_text(spec.default)})
        if launch_text(spec.default) == '':
            assert given == {}, spec.name
            continue
        assert given == {spec.name: spec.default}, spec.name
        assert type(given[spec.name]) is spec.kind, spec.name
    by_parameter = {spec.launch_name for spec in PARAMS if spec.launch_name}
    assert set(arguments) == launch_only | by_parameter  # no argument outside the two lists
    assert not launch_only & by_parameter


def test_launch_only_arguments_that_set_parameters():
    assert parameter_overrides({'rates': 'seg=5,normal=2', 'depth': 'aligned',
                                'detections': '/yolo'}) == {
        'rates.seg': 5.0, 'rates.normal': 2.0, 'use_depth': True, 'box_source': 'detections'}
    assert all(PARAM_BY_NAME[f'rates.{t}'].launch_name is None for t in PERCEPTION_TASKS)


@pytest.mark.parametrize('args, says', [
    ({'cpu_threads': 'two'}, "launch argument cpu_threads:='two' must be an integer"),
    ({'hri': 'yes'}, 'must be true or false'),
    ({'input_size': '1024x768'}, 'is ambiguous'),  # the launch checks the form; the node parses
    ({'cameras': 'a,a'}, 'more than once'),
    ({'rates': 'seg=5000'}, f'HZ from 0 (every frame) to {MAX_RATE_HZ:g}'),
])
def test_a_malformed_launch_argument_is_named(args, says):
    with pytest.raises(ValueError, match='launch argument') as caught:
        parameter_overrides(args)
    assert says in str(caught.value)


def test_the_node_declares_the_table(graph):
    import rclpy
    from rclpy.parameter import Parameter
    from sapiens_ros.ros.perception_node import PerceptionNode

    node = graph.add(PerceptionNode(context=graph.context, parameter_overrides=[
        Parameter('autostart', value=False)]))
    plain = rclpy.create_node('plain', context=graph.context)  # rclpy's own parameters
    try:
        assert set(node._parameters) - set(plain._parameters) == set(PARAM_BY_NAME)
    finally:
        plain.destroy_node()
    for spec in PARAMS:
        value = node.get_parameter(spec.name).value
        if spec.name != 'autostart':
            assert value == spec.default and type(value) is spec.kind, spec.name
        described = node.describe_parameters([spec.name])[0]
        wanted = spec.descriptor()
        assert (described.description, described.read_only, described.dynamic_typing) == \
            (wanted.description, wanted.read_only, wanted.dynamic_typing), spec.name
        assert described.floating_point_range == wanted.floating_point_range, spec.name
        assert described.integer_range == wanted.integer_range, spec.name


def test_every_target_is_a_field_of_its_option_object():
    from sapiens_ros.core.people.state import PeopleConfig
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig
    from sapiens_ros.ros.messages import MessageOptions
    from sapiens_ros.ros.people_world import WorldOptions

    objects = {'message': MessageOptions(), 'pipeline': PipelineConfig(),
               'world': WorldOptions(), 'people': PeopleConfig()}
    assert set(objects) == set(OPTION_OBJECTS)
    values = {spec.name: checked(spec.name, spec.default) for spec in PARAMS}
    for target, options in objects.items():
        for path in routed(target, values):
            owner = options
            for part in path.split('.'):
                assert hasattr(owner, part), f'{target}.{path}'
                owner = getattr(owner, part)


def test_shipped_defaults_are_the_table_defaults():
    """config/perception.yaml documents the defaults: each value it sets is the table's."""
    import yaml

    values = yaml.safe_load((ROOT / 'config' / 'perception.yaml').read_text())
    flat = {}

    def walk(block: dict, prefix: str = '') -> None:
        for key, value in block.items():
            if isinstance(value, dict):
                walk(value, f'{prefix}{key}.')
            else:
                flat[prefix + key] = value

    walk(values['/**']['ros__parameters'])
    for name, value in flat.items():
        assert name in PARAM_BY_NAME, name
        assert checked(name, value) == checked(name, PARAM_BY_NAME[name].default), name


def test_one_rate_rule():
    assert rate_error(0) is None and rate_error(MAX_RATE_HZ) is None
    assert rate_error(-1.0) and rate_error(MAX_RATE_HZ + 1) and rate_error(True)
    assert rate_error(-1.0, allow_inherit=True) is None
    assert rate_error(-2.0, 'front.rates.seg', allow_inherit=True).startswith(
        "front.rates.seg must be -1 (the node's rate) or >= 0 Hz")
    assert checked('rates.seg', 5) == 5.0
    with pytest.raises(ValueError, match='rates.seg must be >= 0 Hz'):
        checked('rates.seg', -1.0)
    assert PARAM_BY_NAME['rates.seg'].descriptor().floating_point_range[0].to_value == \
        MAX_RATE_HZ
