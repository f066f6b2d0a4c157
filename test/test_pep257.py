"""ament_pep257 on the whole package, as `colcon test` runs it."""

import pytest

ament_pep257 = pytest.importorskip('ament_pep257.main')


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    rc = ament_pep257.main(argv=['.', 'test'])
    assert rc == 0, 'Found code style errors / warnings'
