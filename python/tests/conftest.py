"""Fixtures: a sandbox per test, on the engine POCKETDOCK_SOCKET names."""

from __future__ import annotations

from typing import Iterator

import pytest

import pocketdock


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "engine_only: needs a Podman or Docker engine (not run on a cluster: -m 'not engine_only')",
    )


@pytest.fixture
def sb() -> Iterator[pocketdock.Container]:
    c = pocketdock.create_new_container(profile="minimal")
    try:
        yield c
    finally:
        try:
            c.shutdown(force=True)
        except pocketdock.ContainerGone:
            pass


def exists(name: str) -> bool:
    """The engine still has a container called ``name``."""
    try:
        pocketdock.attach_container(name)
    except pocketdock.ContainerGone:
        return False
    return True
