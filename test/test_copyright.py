"""ament_copyright, skipped where it has no wheel (pip installs)."""

import pytest

ament_copyright = pytest.importorskip('ament_copyright.main',
                                      reason='ament_copyright has no pip wheel')


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    rc = ament_copyright.main(argv=['.', 'test'])
    assert rc == 0, 'Found errors'
