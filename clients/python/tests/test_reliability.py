"""What the client does for the caller: retries on UNAVAILABLE, deadlines, transparent
re-registration of the models it registered, and round_robin over several servers."""

from __future__ import annotations

import signal
import threading
import time

import grpc
import numpy as np
import pytest

import torqued
from conftest import TorquedProcess, free_port
from support import PLANAR_ARM_SPEC, random_states


def test_retries_until_a_server_started_late_answers(launch: type[TorquedProcess]) -> None:
    late = launch(port=free_port())
    threads = set(threading.enumerate())
    # 40 retries up to 0.5 s apart: far more than the server needs to start.
    with torqued.Client(
        late.address, retries=40, initial_backoff=0.05, max_backoff=0.5, timeout=60.0
    ) as client:
        starter = threading.Timer(0.5, late.start)
        starter.start()
        try:
            # Sent before anything listens: UNAVAILABLE first, then retried until served.
            names = {m.name for m in client.list_models()}
        finally:
            starter.join()
            late.stop()
        # The channel was polled while the retries waited (its reconnect timers ran), and the
        # poller ends once they are done: the client's calls receive their own answers again.
        end = time.monotonic() + 2.0
        while set(threading.enumerate()) - threads and time.monotonic() < end:
            time.sleep(0.05)
        assert not set(threading.enumerate()) - threads
    assert "stanford_arm" in names


def test_unavailable_without_retries_is_an_error() -> None:
    with torqued.Client(f"127.0.0.1:{free_port()}", retries=0, timeout=10.0) as client:
        with pytest.raises(torqued.Error) as error:
            client.list_models()
    assert error.value.code == grpc.StatusCode.UNAVAILABLE
    assert error.value.method == "ModelService/ListModels"


def test_retries_stop_at_the_deadline() -> None:
    with torqued.Client(f"127.0.0.1:{free_port()}", retries=1000, initial_backoff=0.05) as client:
        start = time.monotonic()
        with pytest.raises(torqued.Error) as error:
            client.list_models(timeout=1.0)
        # Not 1000 retries: the call gives up once the next wait would pass its deadline.
        assert time.monotonic() - start < 5.0
    assert error.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_deadline_exceeded_is_an_error(
    server: TorquedProcess, client: torqued.Client, bundled: dict[str, str]
) -> None:
    model = client.get_model(bundled["quadruped"])
    q, v, a = random_states(model, 20000, seed=21)
    # 20000 states of derivatives cost far more than a millisecond of transfer and compute.
    with pytest.raises(torqued.Error) as error:
        client.derivatives(model.id, q, v, a=a, timeout=1e-3)
    assert error.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    # The client's default timeout applies when a call has none.
    with torqued.Client(server.address, timeout=1e-3) as hasty:
        with pytest.raises(torqued.Error) as error:
            hasty.derivatives(model.id, q, v, a=a)
    assert error.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_reregisters_a_model_deleted_behind_its_back(server: TorquedProcess) -> None:
    with torqued.Client(server.address) as owner, torqued.Client(server.address) as other:
        model = owner.register(spec=PLANAR_ARM_SPEC, name="planar_arm_reregistered")
        q = np.array([[0.2, -0.4], [1.0, 0.5]])
        before = owner.gravity(model.id, q)
        # Another client deletes it (as a replica that never had it would not know it).
        other.delete_model(model.id)
        with pytest.raises(torqued.Error) as error:
            other.gravity(model.id, q)
        assert error.value.code == grpc.StatusCode.NOT_FOUND
        # The owner registers it again and retries: same id, same numbers.
        assert np.array_equal(owner.gravity(model.id, q), before)
        assert other.get_model(model.id).id == model.id
        # Deleting through the owner makes it forget: NOT_FOUND now reaches the caller.
        owner.delete_model(model.id)
        with pytest.raises(torqued.Error) as error:
            owner.gravity(model.id, q)
        assert error.value.code == grpc.StatusCode.NOT_FOUND


def test_round_robin_spreads_calls_and_registers_on_each_replica(
    server: TorquedProcess, launch: type[TorquedProcess]
) -> None:
    replica = launch()
    replica.start_serving()
    target = f"ipv4:{server.address},{replica.address}"
    q = np.array([0.3, 0.1])
    with torqued.Client(target) as spread, torqued.Client(server.address) as first, torqued.Client(
        replica.address
    ) as second:
        model = spread.register(spec=PLANAR_ARM_SPEC, name="planar_arm_round_robin")
        expected = spread.gravity(model.id, q)

        def on_both() -> bool:
            found = 0
            for direct in (first, second):
                try:
                    found += direct.get_model(model.id).id == model.id
                except torqued.Error:
                    pass
            return found == 2

        # Calls alternate between the replicas; the one that lacks the model answers NOT_FOUND
        # once and gets it registered by the client.
        for _ in range(50):
            assert np.array_equal(spread.gravity(model.id, q), expected)
            if on_both():
                break
            time.sleep(0.05)
        assert on_both()
        # With one replica gone, calls keep succeeding on the other.
        replica.stop()
        for _ in range(6):
            assert np.array_equal(spread.gravity(model.id, q), expected)
        first.delete_model(model.id)


def test_a_replica_shutting_down_under_load_fails_no_call(
    server: TorquedProcess, launch: type[TorquedProcess], bundled: dict[str, str]
) -> None:
    """SIGTERM to one of two replicas while calls run: the calls it has received but not
    started come back CANCELLED, and the client sends them again, to the other replica."""
    leaving = launch()
    leaving.start_serving()
    arm = bundled["stanford_arm"]
    q = np.array([0.3, -0.6, 0.5, 0.8, -0.4, 0.2])
    failures: list[str] = []
    calls = [0]
    stop = threading.Event()
    with torqued.Client(f"ipv4:{server.address},{leaving.address}") as client:
        expected = client.gravity(arm, q)

        def load() -> None:
            while not stop.is_set():
                try:
                    assert np.array_equal(client.gravity(arm, q), expected)
                except (torqued.Error, AssertionError) as error:
                    failures.append(repr(error))
                calls[0] += 1

        threads = [threading.Thread(target=load) for _ in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        assert leaving.process is not None
        leaving.process.send_signal(signal.SIGTERM)
        assert leaving.process.wait(timeout=60) == 0
        time.sleep(0.5)
        stop.set()
        for thread in threads:
            thread.join()
    assert calls[0] > 0 and failures == []
