"""ModelService: registering, listing, describing and deleting models."""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence

from google.protobuf import json_format

from torqued._connection import Connection
from torqued.v1 import model_pb2

# The largest page ListModels returns (model.proto): the fewest calls.
_LIST_MODELS_PAGE_SIZE = 1000


class ModelMethods(Connection):
    """Client's ModelService methods; the models it registers are remembered (Connection)."""

    def register(
        self,
        *,
        urdf: Optional[str | os.PathLike[str]] = None,
        dh: Optional[model_pb2.DhTable | Mapping[str, Any]] = None,
        spec: Optional[model_pb2.ModelSpec | Mapping[str, Any]] = None,
        request: Optional[model_pb2.RegisterModelRequest] = None,
        mjcf: Optional[str | os.PathLike[str]] = None,
        sdf: Optional[str | os.PathLike[str]] = None,
        name: str = "",
        floating_base: Optional[bool] = None,
        gravity: Optional[Sequence[float]] = None,
        strict: bool = False,
        timeout: Optional[float] = None,
    ) -> model_pb2.Model:
        """Registers a model (idempotent) and returns its id and layout.

        Give exactly one source: `urdf`, `mjcf` or `sdf` (XML text, or a path-like to a URDF,
        MJCF or SDF file), `dh` (a DhTable, or a dict in its proto JSON form), `spec` (a
        ModelSpec or dict), or a complete `request` (then name, floating_base and gravity are
        ignored). The client remembers the request, and registers it again if a later call finds
        the id unknown. An MJCF file's <include> elements are not followed (the server refuses
        them): inline them first.

        Args:
            name: model name; empty: the description's own (URDF robot, MJCF model, SDF model),
                or "dh_model" / "spec_model".
            floating_base: True: attach the root link through a free-flyer "root_joint" (an
                MJCF file's free joint on its root body becomes it). False: weld the root link to
                the world (an MJCF free joint is dropped). None (the default): the source's own
                base, as the server reads it (RegisterModelRequest.base unset, BaseType in
                model.proto): an MJCF document whose root body has a free joint floats, an SDF
                model unless it is <static> or a joint attaches it to the world; URDF, DH and
                spec sources are welded.
            gravity: gravity acceleration in the world frame, m/s^2; None: (0, 0, -9.81).
            strict: refuse the model (INVALID_ARGUMENT) if building it gives any warning (with
                `request` too: it sets the request's `strict`).
            timeout: deadline in seconds; None: the client's.

        Returns:
            The registered model (id, nq, nv, joints, bodies, frames, warnings).

        Raises:
            Error: INVALID_ARGUMENT naming the joint or link at fault, RESOURCE_EXHAUSTED, ...
        """
        given = [source is not None for source in (urdf, mjcf, sdf, dh, spec, request)]
        if sum(given) != 1:
            raise ValueError("register: give exactly one of urdf, mjcf, sdf, dh, spec, request")
        if request is None:
            request = model_pb2.RegisterModelRequest(name=name)
            if floating_base is not None:
                request.base = (
                    model_pb2.BASE_TYPE_FLOATING if floating_base else model_pb2.BASE_TYPE_FIXED
                )
            if gravity is not None:
                x, y, z = (float(g) for g in gravity)
                request.gravity.CopyFrom(model_pb2.Vector3(x=x, y=y, z=z))
            for field, document in (("urdf", urdf), ("mjcf", mjcf), ("sdf", sdf)):
                if isinstance(document, os.PathLike):
                    setattr(request, field, open(document, encoding="utf-8").read())
                elif document is not None:
                    setattr(request, field, document)
            if isinstance(dh, Mapping):
                json_format.ParseDict(dh, request.dh)
            elif dh is not None:
                request.dh.CopyFrom(dh)
            elif isinstance(spec, Mapping):
                json_format.ParseDict(spec, request.spec)
            elif spec is not None:
                request.spec.CopyFrom(spec)
        else:
            copied = model_pb2.RegisterModelRequest()
            copied.CopyFrom(request)
            request = copied
        if strict:
            request.strict = True
        return self._register_request(request, self._deadline(timeout))

    def get_model(self, model_id: str, *, timeout: Optional[float] = None) -> model_pb2.Model:
        """The layout of a model: nq, nv, joints (with q/v offsets), bodies and frames.

        Raises:
            Error: NOT_FOUND for an unknown id (after re-registering one this client registered).
        """
        request = model_pb2.GetModelRequest(model_id=model_id)
        return self._on_model(
            "ModelService/GetModel", self._models.GetModel, request, model_id, timeout
        )

    def list_models(self, *, timeout: Optional[float] = None) -> list[model_pb2.ModelSummary]:
        """Every model the server holds (id, name, base, nq, nv, origin), by name then id.

        ListModels answers a page at a time; every page is fetched, all within `timeout`.
        """
        deadline = self._deadline(timeout)
        request = model_pb2.ListModelsRequest(page_size=_LIST_MODELS_PAGE_SIZE)
        models: list[model_pb2.ModelSummary] = []
        while True:
            response = self._invoke(
                "ModelService/ListModels", self._models.ListModels, request, deadline
            )
            models.extend(response.models)
            if not response.next_page_token:
                return models
            request.page_token = response.next_page_token

    def delete_model(self, model_id: str, *, timeout: Optional[float] = None) -> None:
        """Deletes a registered model; this client forgets it (no re-registration).

        Raises:
            Error: NOT_FOUND for an unknown id, FAILED_PRECONDITION for a repository model.
        """
        with self._sources_lock:
            self._sources.pop(model_id, None)
        self._invoke(
            "ModelService/DeleteModel",
            self._models.DeleteModel,
            model_pb2.DeleteModelRequest(model_id=model_id),
            self._deadline(timeout),
        )
