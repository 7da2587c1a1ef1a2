"""OpenTelemetry tests use the calc project."""

from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
