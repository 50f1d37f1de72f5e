"""The agent API's reference as a page of the dashboard, read from the same OpenAPI schema that
`/api/v1/openapi.json` serves: one source, in the app's own layout, readable without scripts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.web.api import api

METHOD_ORDER = ["get", "put", "post", "patch", "delete"]


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True)
class Model:
    name: str
    anchor: str
    description: str
    fields: list[Field]


@dataclass
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: str
    parameters: list[Field] = field(default_factory=list)
    body: str = ""
    responses: list[tuple[str, str, str]] = field(default_factory=list)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_of(schema: dict[str, Any] | bool) -> str:
    """A JSON schema as a reader names its type: `string`, `list of TodoItem`, `integer or null`."""
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return _ref_name(schema["$ref"])
    if "anyOf" in schema:
        return " or ".join(type_of(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(str(value) for value in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {type_of(schema.get('items', {}))}"
    if schema.get("type") == "object" and "additionalProperties" in schema:
        return f"object of {type_of(schema['additionalProperties'])}"
    return str(schema.get("type", "any"))


def _body_model(operation: dict[str, Any]) -> str:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    return type_of(schema) if schema else ""


def _responses(operation: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for status, response in sorted(operation.get("responses", {}).items()):
        content = response.get("content", {}).get("application/json", {})
        schema = content.get("schema", {})
        rows.append((status, response.get("description", ""), type_of(schema) if schema else ""))
    return rows


def reference() -> tuple[dict[str, Any], list[Operation], list[Model]]:
    schema = api.get_openapi_schema(path_prefix="/api/v1/")
    operations = []
    for path, methods in schema["paths"].items():
        for method in sorted(methods, key=METHOD_ORDER.index):
            operation = methods[method]
            operations.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    anchor=operation.get("operationId", f"{method}-{path}"),
                    summary=operation.get("summary", ""),
                    description=operation.get("description", ""),
                    parameters=[
                        Field(
                            name=f"{parameter['name']} ({parameter['in']})",
                            type=type_of(parameter.get("schema", {})),
                            required=parameter.get("required", False),
                            description=parameter.get("description", ""),
                        )
                        for parameter in operation.get("parameters", [])
                    ],
                    body=_body_model(operation),
                    responses=_responses(operation),
                )
            )
    models = []
    for name, model in schema.get("components", {}).get("schemas", {}).items():
        required = set(model.get("required", []))
        models.append(
            Model(
                name=name,
                anchor=f"model-{name}",
                description=model.get("description", ""),
                fields=[
                    Field(
                        name=key,
                        type=type_of(value),
                        required=key in required,
                        description=value.get("description", ""),
                    )
                    for key, value in model.get("properties", {}).items()
                ],
            )
        )
    return schema["info"], operations, models


def api_docs(request: HttpRequest) -> HttpResponse:
    info, operations, models = reference()
    context = {"info": info, "operations": operations, "models": models}
    return render(request, "dashboard/api_docs.html", context)
