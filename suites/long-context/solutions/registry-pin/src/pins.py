"""Pinned versions of the third-party packages we ship with."""

PINS = {
    "basalt-cedar": "2.4.0",
    "orrery-core": "4.17.3",
    "orrery-core-extras": "3.9.8",
    "zephyr-umber": "0.14.2",
}
