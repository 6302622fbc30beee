"""`--tablestore-scope function` (passed by scripts/ci/packages.sh in a second run that
selects only this file): every test gets its own server."""

import pytest

seen = []


@pytest.mark.parametrize("n", [1, 2])
def test_each_test_gets_its_own_server(tablestore, request, n):
    if request.config.getoption("--tablestore-scope") != "function":
        pytest.skip("run with --tablestore-scope function")
    seen.append(tablestore.endpoint)
    if n == 2:
        assert seen[0] != seen[1], seen
        assert len(set(seen)) == 2
