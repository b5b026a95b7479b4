"""ModelService through the client: listing, registering from each source, getting, deleting."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

import torqued
from conftest import TorquedProcess
from support import PLANAR_ARM_DH, PLANAR_ARM_SPEC, PLANAR_GRAVITY, REPOSITORY
from torqued.v1 import model_pb2


def test_list_models_holds_the_bundled_repository(client: torqued.Client) -> None:
    models = {m.name: m for m in client.list_models()}
    assert {"double_pendulum", "puma560", "quadruped", "stanford_arm"} <= set(models)
    assert (models["stanford_arm"].nq, models["stanford_arm"].nv) == (6, 6)
    # Floating base: a free-flyer (7 q, 6 v) and 12 leg joints.
    assert (models["quadruped"].nq, models["quadruped"].nv) == (19, 18)
    assert models["quadruped"].base == model_pb2.BASE_TYPE_FLOATING
    for name in ("double_pendulum", "puma560", "quadruped", "stanford_arm"):
        assert models[name].origin == model_pb2.MODEL_ORIGIN_REPOSITORY


def test_list_models_walks_every_page(launch: type[TorquedProcess]) -> None:
    # Names of 16 KiB (the largest --max-name-bytes) fill a page each: pages stay under 64 KiB.
    server = launch(args=["--max-name-bytes=16384"])
    server.start_serving()
    with torqued.Client(server.address, timeout=60.0) as client:
        bundled = len(client.list_models())
        names = [f"{'p' * 16380}{1000 + i}" for i in range(4)]
        for name in names:
            client.register(dh=PLANAR_ARM_DH, name=name)
        listed = [m.name for m in client.list_models()]
    assert len(listed) == bundled + len(names)
    assert [name for name in listed if name.startswith("p" * 16380)] == names


def test_register_get_delete_a_spec(client: torqued.Client) -> None:
    model = client.register(spec=PLANAR_ARM_SPEC, name="planar_arm_lifecycle")
    assert len(model.id) == 32
    assert (model.nq, model.nv) == (2, 2)
    assert [j.name for j in model.joints] == ["shoulder", "elbow"]
    assert model.origin == model_pb2.MODEL_ORIGIN_REGISTERED
    # Content-addressed and idempotent: the same request gives the same id.
    assert client.register(spec=PLANAR_ARM_SPEC, name="planar_arm_lifecycle").id == model.id
    assert client.get_model(model.id) == model
    assert model.id in {m.id for m in client.list_models()}

    client.delete_model(model.id)
    assert model.id not in {m.id for m in client.list_models()}
    for call in (lambda: client.get_model(model.id), lambda: client.delete_model(model.id)):
        with pytest.raises(torqued.Error) as error:
            call()
        assert error.value.code == grpc.StatusCode.NOT_FOUND
        assert model.id in error.value.message


def test_urdf_as_path_or_text_and_the_repository_give_one_id(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    path = REPOSITORY / "double_pendulum.urdf"
    from_path = client.register(urdf=Path(path), name="double_pendulum")
    from_text = client.register(urdf=path.read_text(), name="double_pendulum")
    # The repository registered the same URDF under the same name and base at start.
    assert from_path.id == from_text.id == bundled["double_pendulum"]
    assert from_path.origin == model_pb2.MODEL_ORIGIN_REPOSITORY


def test_dh_table_and_request_sources(client: torqued.Client) -> None:
    dh = client.register(dh=PLANAR_ARM_DH, name="planar_arm_dh_source", gravity=PLANAR_GRAVITY)
    assert (dh.nq, dh.nv) == (2, 2)
    assert (dh.gravity.x, dh.gravity.y, dh.gravity.z) == PLANAR_GRAVITY
    request = model_pb2.RegisterModelRequest(
        name="planar_arm_dh_source", gravity=model_pb2.Vector3(y=-9.81)
    )
    json_format.ParseDict(PLANAR_ARM_DH, request.dh)
    assert client.register(request=request).id == dh.id
    client.delete_model(dh.id)


def test_floating_base_registration(client: torqued.Client) -> None:
    floating = client.register(spec=PLANAR_ARM_SPEC, name="planar_arm_floating", floating_base=True)
    assert (floating.nq, floating.nv) == (9, 8)
    assert floating.joints[0].name == "root_joint"
    assert floating.joints[0].type == model_pb2.JOINT_TYPE_FREE_FLYER
    client.delete_model(floating.id)


MJCF_PENDULUM = """<mujoco model="mjcf_pendulum"><worldbody>
  <body name="base"><freejoint/><inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>
    <body name="arm" pos="0 0 -0.5"><joint name="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.25" mass="1" diaginertia="0.02 0.02 0.001"/></body></body>
</worldbody></mujoco>"""

SDF_PENDULUM = """<sdf version="1.9"><model name="sdf_pendulum"><link name="base"/>
  <joint name="hinge" type="revolute"><parent>base</parent><child>arm</child>
    <axis><xyz>0 1 0</xyz></axis></joint>
  <link name="arm"><inertial><pose>0 0 -0.25 0 0 0</pose><mass>1</mass>
    <inertia><ixx>0.02</ixx><iyy>0.02</iyy><izz>0.001</izz></inertia></inertial></link>
</model></sdf>"""


def test_register_mjcf_and_sdf_text_and_files(client: torqued.Client, tmp_path: Path) -> None:
    path = tmp_path / "pendulum.sdf"
    path.write_text(SDF_PENDULUM)
    from_file = client.register(sdf=path)
    assert (from_file.name, from_file.nv) == ("sdf_pendulum", 7)
    assert client.register(sdf=SDF_PENDULUM).id == from_file.id
    with pytest.raises(torqued.Error) as refused:
        client.register(mjcf='<mujoco><include file="arm.xml"/></mujoco>')
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "arm.xml" in refused.value.message


def test_the_document_decides_the_base_unless_the_caller_says_otherwise(
    client: torqued.Client,
) -> None:
    # Without floating_base the request leaves `base` unset and the source decides: the MJCF
    # file's free joint on its root body floats it; floating_base=False welds the root (its free
    # joint dropped), True floats it on "root_joint".
    document = client.register(mjcf=MJCF_PENDULUM)
    assert (document.name, document.nq, document.nv) == ("mjcf_pendulum", 8, 7)
    assert document.base == model_pb2.BASE_TYPE_FLOATING
    assert document.joints[0].type == model_pb2.JOINT_TYPE_FREE_FLYER
    assert client.register(mjcf=MJCF_PENDULUM, floating_base=True).id == document.id
    welded = client.register(mjcf=MJCF_PENDULUM, floating_base=False)
    assert (welded.nq, welded.nv, welded.base) == (1, 1, model_pb2.BASE_TYPE_FIXED)
    # An SDF model floats unless it is <static> or a joint attaches it to the world, as a
    # simulator reads it; floating_base=False welds it.
    sdf = client.register(sdf=SDF_PENDULUM)
    assert (sdf.nq, sdf.nv, sdf.base) == (8, 7, model_pb2.BASE_TYPE_FLOATING)
    assert sdf.joints[0].name == "root_joint"
    assert client.register(sdf=SDF_PENDULUM, floating_base=True).id == sdf.id
    welded_sdf = client.register(sdf=SDF_PENDULUM, floating_base=False)
    assert (welded_sdf.nq, welded_sdf.nv, welded_sdf.base) == (1, 1, model_pb2.BASE_TYPE_FIXED)
    static = client.register(sdf=SDF_PENDULUM.replace("<link name=\"base\"/>",
                                                      "<static>true</static><link name=\"base\"/>"))
    assert static.id == welded_sdf.id
    attached = client.register(sdf=SDF_PENDULUM.replace(
        "<link name=\"base\"/>",
        "<link name=\"base\"/><joint name=\"weld\" type=\"fixed\"><parent>world</parent>"
        "<child>base</child></joint>"))
    assert attached.id == welded_sdf.id
    for model in (document, welded, sdf, welded_sdf):
        client.delete_model(model.id)


def test_register_needs_exactly_one_source(client: torqued.Client) -> None:
    with pytest.raises(ValueError):
        client.register()
    with pytest.raises(ValueError):
        client.register(urdf="<robot/>", spec=PLANAR_ARM_SPEC)


def hinged_arm(arm: dict) -> dict:
    """A spec dict: link `arm` (as given) on a revolute joint "hinge" from link "base"."""
    return {
        "links": [{"name": "base"}, arm],
        "joints": [
            {
                "name": "hinge",
                "type": "JOINT_TYPE_REVOLUTE",
                "parent_link": "base",
                "child_link": "arm",
                "axis": {"z": 1.0},
            }
        ],
    }


def test_malformed_source_is_invalid_argument(client: torqued.Client) -> None:
    broken = hinged_arm({"name": "arm", "inertial": {"mass": -1.0}})
    with pytest.raises(torqued.Error) as error:
        client.register(spec=broken)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "arm" in error.value.message


def test_repository_model_cannot_be_deleted(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    with pytest.raises(torqued.Error) as error:
        client.delete_model(bundled["stanford_arm"])
    assert error.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_strict_registration_refuses_a_model_with_warnings(client: torqued.Client) -> None:
    # A massless arm: the hinge moves no inertia, which is a warning.
    massless = hinged_arm({"name": "arm"})
    model = client.register(spec=massless, name="massless_arm")
    assert any("hinge" in warning for warning in model.warnings)
    with pytest.raises(torqued.Error) as error:
        client.register(spec=massless, name="massless_arm", strict=True)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "strict checking" in error.value.message and "hinge" in error.value.message
    client.delete_model(model.id)
