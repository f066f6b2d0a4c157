"""ament_xmllint on package.xml and the other XML files (the DDS profile), as colcon test does."""

import shutil

import pytest

ament_xmllint = pytest.importorskip('ament_xmllint.main',
                                    reason='ament_xmllint comes with ROS (or shared/ros-tools)')


@pytest.mark.linter
@pytest.mark.xmllint
def test_xmllint():
    if shutil.which('xmllint') is None:
        pytest.skip('the xmllint program is missing (apt install libxml2-utils)')
    rc = ament_xmllint.main(argv=[])
    assert rc == 0, 'Found errors'
