"""Banks of names and small helpers to draw from them: repositories, paths, identifiers."""

from __future__ import annotations

import random
import string

REPOS = [
    "billing-core",
    "geo-tiles",
    "inventory-svc",
    "ledger",
    "mailroom",
    "ratelimit",
    "scheduler",
    "search-api",
    "shipping",
    "telemetry-agent",
    "tokenizer",
    "user-profiles",
    "vault-sync",
    "warehouse-etl",
    "weather-cache",
    "payments-gw",
    "notif-hub",
    "pdf-render",
    "img-resize",
    "feature-flags",
    "csv-tools",
    "chat-bridge",
    "quota-keeper",
    "audit-trail",
    "sensor-ingest",
    "price-engine",
    "recsys-lite",
    "doc-indexer",
    "kv-store",
    "cron-runner",
    "auth-proxy",
]
ORGS = ["acme", "northwind", "globex", "initech", "umbrella", "hooli", "piedpiper", "vandelay"]
WORKDIRS = ["/workspace", "/repo", "/home/user", "/app", "/src", "/mnt/work", "~"]
PY_PKGS = ["app", "core", "lib", "service", "engine", "utils", "pkg", "src"]
PEOPLE = ["Dana", "Priya", "Tomas", "Mei", "Olu", "Sven", "Aisha", "Jonas", "Lucia", "Ravi"]
CITIES = [
    "Oslo",
    "Lisbon",
    "Nairobi",
    "Osaka",
    "Denver",
    "Krakow",
    "Santiago",
    "Toronto",
    "Hanoi",
    "Reykjavik",
    "Cairo",
    "Perth",
    "Austin",
    "Tallinn",
    "Bogota",
    "Lyon",
    "Pune",
    "Halifax",
]
CONDITIONS = [
    "overcast",
    "light rain",
    "clear skies",
    "snow showers",
    "fog",
    "partly cloudy",
    "drizzle",
    "strong wind",
    "sunny",
    "thunderstorms",
]


def ident(rng: random.Random, n: int = 8, alphabet: str = string.ascii_lowercase) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def hexid(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def alnum(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def pick(rng: random.Random, items: list) -> object:
    return items[rng.randrange(len(items))]


def maybe(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def snake(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def pascal(name: str) -> str:
    return "".join(p.title() for p in name.split("_"))
