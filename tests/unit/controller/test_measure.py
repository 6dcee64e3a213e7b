import math

import pytest

from fairgate_controller.algorithms import PortMeasurement


def test_rates_and_derived_properties():
    m = PortMeasurement(
        period_s=0.5,
        capacity_Bps=1000.0,
        arrival_bytes=600,
        arrival_pkts=6,
        departure_bytes=500,
        departure_pkts=5,
        drop_bytes=100,
        drop_pkts=1,
        queue_drop_bytes=40,
        queue_drop_pkts=1,
        queue_mean_bytes=250.0,
        syn_admitted=3,
        syn_dropped=2,
        syn_ungated=1,
        fins=4,
    )
    assert m.y_Bps == 1200.0
    assert m.departure_Bps == 1000.0
    assert m.drop_Bps == 200.0
    assert m.load == 1.2
    assert m.utilisation == 1.0
    assert m.mean_pkt_bytes == 100.0
    # The queue's own drops, not arrivals - departures (which counts its growth too).
    assert m.virtual_queue_bytes == 290.0
    assert m.syns_seen == 6
    assert m.syns_passed == 4
    assert m.syn_rate_per_s == 12.0
    assert m.completion_rate_per_s == 8.0


def test_from_counters_clamps_drops_at_zero():
    m = PortMeasurement.from_counters(
        period_s=1.0,
        capacity_Bps=1.0,
        arrival_bytes=100,
        arrival_pkts=1,
        departure_bytes=300,  # counters read a moment apart: departures ahead of arrivals
        departure_pkts=3,
    )
    assert m.drop_bytes == 0 and m.drop_pkts == 0
    m = PortMeasurement.from_counters(
        period_s=1.0,
        capacity_Bps=1.0,
        arrival_bytes=900,
        arrival_pkts=9,
        departure_bytes=300,
        departure_pkts=3,
    )
    assert (m.drop_bytes, m.drop_pkts) == (600, 6)


def test_no_arrivals_has_no_mean_packet_size():
    assert PortMeasurement(period_s=1.0, capacity_Bps=1.0).mean_pkt_bytes is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("period_s", 0.0, "period_s must be > 0"),
        ("period_s", -1.0, "period_s must be > 0"),
        ("capacity_Bps", 0.0, "capacity_Bps must be > 0"),
        ("arrival_bytes", -1, "arrival_bytes must be >= 0"),
        ("drop_pkts", -2, "drop_pkts must be >= 0"),
        ("queue_min_bytes", -0.5, "queue_min_bytes must be >= 0"),
        ("fins", -1, "fins must be >= 0"),
        ("rtt_mean_s", -0.1, "rtt_mean_s must be >= 0"),
        ("arrival_bytes", math.nan, "must be finite"),
        ("queue_mean_bytes", math.inf, "must be finite"),
        ("syn_admitted", "3", "must be a number"),
        ("fins", True, "must be a number"),
    ],
)
def test_validation_rejects_bad_values(field, value, message):
    kwargs = {"period_s": 1.0, "capacity_Bps": 1.0, field: value}
    with pytest.raises(ValueError, match=message):
        PortMeasurement(**kwargs)


def test_is_frozen():
    m = PortMeasurement(period_s=1.0, capacity_Bps=1.0)
    with pytest.raises(AttributeError):
        m.period_s = 2.0  # type: ignore[misc]
