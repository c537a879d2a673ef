"""The 16 retail tools over an in-memory copy of the τ-bench retail database.

Written from the tool schemas and the policy so the corpus can replay write calls and compare
end states (τ-bench rewards the final database state, not the calls). Every tool answers a
string, JSON or plain, and errors come back as "Error: ..." strings instead of exceptions,
because that is what an agent sees in a real trace.
"""

from __future__ import annotations

import ast
import copy
import json
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Json = dict[str, Any]

WRITE_TOOLS = (
    "cancel_pending_order",
    "modify_pending_order_items",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
    "modify_user_address",
)
READ_TOOLS = (
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_user_details",
    "get_order_details",
    "get_product_details",
    "list_all_product_types",
    "calculate",
    "think",
    "transfer_to_human_agents",
)
ADDRESS_KEYS = ("address1", "address2", "city", "state", "country", "zip")


def load_db(root: Path = HERE) -> Json:
    """Read the three tables once; callers deep-copy per episode."""
    return {
        name: json.loads((root / "db" / f"{name}.json").read_text(encoding="utf-8"))
        for name in ("users", "orders", "products")
    }


def money(value: float) -> float:
    """Round like a till does, so replays agree to the cent."""
    return round(value + 0.0, 2)


_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _evaluate(node: ast.AST) -> float:
    """Evaluate +, -, *, / over numbers only: never `eval` text from a conversation."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    raise ValueError("unsupported expression")


class RetailTools:
    """One episode's world: a private copy of the database and the tools that act on it."""

    def __init__(self, db: Json) -> None:
        # Copy on write: tables are shallow copies and an entity is deep-copied before its first
        # change, so the shared database is never touched and an episode costs little to start.
        self.db = {name: dict(table) for name, table in db.items()}
        self._owned: set[tuple[str, str]] = set()

    def _own(self, table: str, key: str) -> Json | None:
        """The episode's private, writable copy of one entity."""
        if key not in self.db[table]:
            return None
        if (table, key) not in self._owned:
            self.db[table][key] = copy.deepcopy(self.db[table][key])
            self._owned.add((table, key))
        return self.db[table][key]

    # -- dispatch -----------------------------------------------------------------------------
    def call(self, name: str, arguments: Json) -> str:
        """Run a tool by name; bad names or arguments become error strings, never exceptions."""
        method = getattr(self, f"tool_{name}", None)
        if method is None:
            return f"Error: unknown tool {name}"
        try:
            return str(method(**arguments))
        except TypeError as exc:
            return f"Error: bad arguments for {name}: {exc}"
        except (KeyError, ValueError, ZeroDivisionError) as exc:
            return f"Error: {exc}"

    # -- helpers ------------------------------------------------------------------------------
    def _user(self, user_id: str) -> Json | None:
        return self.db["users"].get(user_id)

    def _order(self, order_id: str) -> Json | None:
        return self._own("orders", order_id)

    def _order_in(self, order_id: str, status: str, refusal: str) -> Json | str:
        """The order if it is in ``status``, else the tool's error text."""
        order = self._order(order_id)
        if order is None:
            return "Error: order not found"
        return order if order["status"] == status else f"Error: {refusal}"

    def _variant(self, product_id: str, item_id: str) -> Json | None:
        product = self.db["products"].get(product_id)
        return None if product is None else product["variants"].get(item_id)

    def _payment(self, user_id: str, payment_method_id: str) -> Json | None:
        user = self._own("users", user_id)
        return None if user is None else user["payment_methods"].get(payment_method_id)

    def _take_items(self, order: Json, item_ids: list[str]) -> list[Json] | str:
        """Match each requested id to a distinct order line (ids may repeat in an order)."""
        free = list(order["items"])
        taken: list[Json] = []
        for item_id in item_ids:
            line = next((item for item in free if item["item_id"] == item_id), None)
            if line is None:
                return f"Error: item {item_id} not found in order"
            free.remove(line)
            taken.append(line)
        return taken

    def _swap_plan(
        self, order: Json, item_ids: list[str], new_item_ids: list[str]
    ) -> tuple[list[Json], list[Json], float] | str:
        """Check an exchange/modify request and return (lines, new variants, price change)."""
        if len(item_ids) != len(new_item_ids) or not item_ids:
            return "Error: the number of items to be exchanged should match"
        lines = self._take_items(order, item_ids)
        if isinstance(lines, str):
            return lines
        variants: list[Json] = []
        for line, new_id in zip(lines, new_item_ids, strict=True):
            variant = self._variant(line["product_id"], new_id)
            if variant is None or not variant["available"]:
                return f"Error: new item {new_id} not found or available"
            variants.append(variant)
        diff = money(sum(v["price"] for v in variants) - sum(line["price"] for line in lines))
        return lines, variants, diff

    def _charge(self, user_id: str, payment_method_id: str, amount: float) -> str | None:
        """Move money on a gift card; other methods only leave a history entry."""
        method = self._payment(user_id, payment_method_id)
        if method is None:
            return "Error: payment method not found"
        if method["source"] == "gift_card":
            if amount > 0 and method["balance"] < amount:
                return "Error: insufficient gift card balance to pay for the price difference"
            method["balance"] = money(method["balance"] - amount)
        return None

    # -- reads --------------------------------------------------------------------------------
    def tool_find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db["users"].items():
            if user["email"].lower() == email.strip().lower():
                return user_id
        return "Error: user not found"

    def tool_find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user_id, user in self.db["users"].items():
            name = user["name"]
            if (
                name["first_name"].lower() == first_name.strip().lower()
                and name["last_name"].lower() == last_name.strip().lower()
                and user["address"]["zip"] == zip.strip()
            ):
                return user_id
        return "Error: user not found"

    def tool_get_user_details(self, user_id: str) -> str:
        user = self._user(user_id)
        return "Error: user not found" if user is None else json.dumps(user)

    def tool_get_order_details(self, order_id: str) -> str:
        order = self._order(order_id)
        return "Error: order not found" if order is None else json.dumps(order)

    def tool_get_product_details(self, product_id: str) -> str:
        product = self.db["products"].get(product_id)
        return "Error: product not found" if product is None else json.dumps(product)

    def tool_list_all_product_types(self) -> str:
        names = {p["name"]: p["product_id"] for p in self.db["products"].values()}
        return json.dumps(dict(sorted(names.items())))

    def tool_calculate(self, expression: str) -> str:
        if any(ch not in "0123456789+-*/(). " for ch in expression):
            return "Error: invalid characters in expression"
        try:
            value = _evaluate(ast.parse(expression, mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:
            return f"Error: {exc}"
        return str(round(value, 2))

    def tool_think(self, thought: str) -> str:
        return ""

    def tool_transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    # -- writes -------------------------------------------------------------------------------
    def tool_cancel_pending_order(self, order_id: str, reason: str) -> str:
        order = self._order_in(order_id, "pending", "non-pending order cannot be cancelled")
        if isinstance(order, str):
            return order
        if reason not in ("no longer needed", "ordered by mistake"):
            return "Error: invalid reason"
        refunds = []
        for entry in order["payment_history"]:
            if entry["transaction_type"] != "payment":
                continue
            refunds.append(
                {
                    "transaction_type": "refund",
                    "amount": entry["amount"],
                    "payment_method_id": entry["payment_method_id"],
                }
            )
            method = self._payment(order["user_id"], entry["payment_method_id"])
            if method is not None and method["source"] == "gift_card":
                method["balance"] = money(method["balance"] + entry["amount"])
        order["payment_history"].extend(refunds)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        return json.dumps(order)

    def tool_modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> str:
        order = self._order_in(order_id, "pending", "non-pending order cannot be modified")
        if isinstance(order, str):
            return order
        plan = self._swap_plan(order, item_ids, new_item_ids)
        if isinstance(plan, str):
            return plan
        lines, variants, diff = plan
        error = self._charge(order["user_id"], payment_method_id, diff)
        if error:
            return error
        if diff != 0:
            kind = "payment" if diff > 0 else "refund"
            order["payment_history"].append(
                {
                    "transaction_type": kind,
                    "amount": abs(diff),
                    "payment_method_id": payment_method_id,
                }
            )
        for line, variant in zip(lines, variants, strict=True):
            line["item_id"] = variant["item_id"]
            line["price"] = variant["price"]
            line["options"] = dict(variant["options"])
        order["status"] = "pending (item modified)"
        return json.dumps(order)

    def tool_modify_pending_order_address(
        self,
        order_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> str:
        order = self._order_in(order_id, "pending", "non-pending order cannot be modified")
        if isinstance(order, str):
            return order
        values = (address1, address2, city, state, country, zip)
        order["address"] = dict(zip_pairs(ADDRESS_KEYS, values))
        return json.dumps(order)

    def tool_modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> str:
        order = self._order_in(order_id, "pending", "non-pending order cannot be modified")
        if isinstance(order, str):
            return order
        payments = [e for e in order["payment_history"] if e["transaction_type"] == "payment"]
        if len(payments) != 1:
            return "Error: there should be exactly one payment for a pending order"
        old = payments[0]
        if old["payment_method_id"] == payment_method_id:
            return "Error: the new payment method should be different from the current one"
        total = old["amount"]
        error = self._charge(order["user_id"], payment_method_id, total)
        if error:
            return error
        self._charge(order["user_id"], old["payment_method_id"], -total)
        order["payment_history"].extend(
            [
                {
                    "transaction_type": "payment",
                    "amount": total,
                    "payment_method_id": payment_method_id,
                },
                {
                    "transaction_type": "refund",
                    "amount": total,
                    "payment_method_id": old["payment_method_id"],
                },
            ]
        )
        return json.dumps(order)

    def tool_return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> str:
        order = self._order_in(order_id, "delivered", "non-delivered order cannot be returned")
        if isinstance(order, str):
            return order
        method = self._payment(order["user_id"], payment_method_id)
        original = order["payment_history"][0]["payment_method_id"]
        if method is None or (payment_method_id != original and method["source"] != "gift_card"):
            return (
                "Error: payment method should be either the original payment method or a gift card"
            )
        lines = self._take_items(order, item_ids)
        if isinstance(lines, str):
            return lines
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return json.dumps(order)

    def tool_exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> str:
        order = self._order_in(order_id, "delivered", "non-delivered order cannot be exchanged")
        if isinstance(order, str):
            return order
        plan = self._swap_plan(order, item_ids, new_item_ids)
        if isinstance(plan, str):
            return plan
        _, _, diff = plan
        method = self._payment(order["user_id"], payment_method_id)
        if method is None:
            return "Error: payment method not found"
        if method["source"] == "gift_card" and method["balance"] < diff:
            return "Error: insufficient gift card balance to pay for the price difference"
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff
        return json.dumps(order)

    def tool_modify_user_address(
        self,
        user_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> str:
        user = self._own("users", user_id)
        if user is None:
            return "Error: user not found"
        values = (address1, address2, city, state, country, zip)
        user["address"] = dict(zip_pairs(ADDRESS_KEYS, values))
        return json.dumps(user)


def zip_pairs(keys: tuple[str, ...], values: tuple[str, ...]) -> list[tuple[str, str]]:
    """Pair address keys with values (the tools shadow the builtin `zip` with a parameter)."""
    return list(zip(keys, values, strict=True))


def entity_key(name: str, arguments: Json) -> str | None:
    """The entity a successful write returns: the order, or the user for an address change."""
    if name == "modify_user_address":
        return f"user_id={arguments.get('user_id')}"
    if name in WRITE_TOOLS:
        return f"order_id={arguments.get('order_id')}"
    return None


def end_state(db: Json, writes: list[tuple[str, Json]]) -> dict[str, Json]:
    """Replay writes on a fresh copy and read back every entity a successful write returned."""
    tools = RetailTools(db)
    keys: list[str] = []
    for name, arguments in writes:
        answer = tools.call(name, arguments)
        key = entity_key(name, arguments)
        if key is not None and not answer.startswith("Error") and key not in keys:
            keys.append(key)
    state: dict[str, Json] = {}
    for key in sorted(keys):
        kind, _, ident = key.partition("=")
        read = "get_order_details" if kind == "order_id" else "get_user_details"
        state[key] = json.loads(tools.call(read, {kind: ident}))
    return state
