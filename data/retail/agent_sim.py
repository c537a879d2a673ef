"""A scripted retail agent that follows the policy, with one controlled mistake per run at most.

It drives the episode: asks the user (`UserSim`), calls tools one at a time in OpenAI format,
asks for explicit confirmation before each write and reports the result. The order of reads,
extra reads and the order of item pairs vary per run, so the same goal is reached by different
call lists; a mistake (if any) changes the end state or breaks the policy in a known way.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from retail_tools import WRITE_TOOLS, RetailTools
from user_sim import ITEM_KINDS, Request, UserSim

Json = dict[str, Any]

MISTAKES = ("wrong_item", "missed_confirmation", "unjustified_write", "false_claim")
TRANSFER = "premature_transfer"
STATUS_NEEDED = {
    "cancel_pending_order": "pending",
    "modify_pending_order_items": "pending",
    "modify_pending_order_address": "pending",
    "modify_pending_order_payment": "pending",
    "return_delivered_order_items": "delivered",
    "exchange_delivered_order_items": "delivered",
}
ASK_ID = [
    "I can help you with that. First, I need to verify your identity. Could you please provide "
    "your email address, or your first name, last name and zip code?",
    "Sure, I'd be happy to help. Before we start, could you please share your email or your name "
    "and zip code so I can authenticate you?",
    "I can certainly help with that. To get started, please provide the email address on your "
    "account, or your full name and zip code.",
]
ANYTHING_ELSE = [
    "Is there anything else I can help you with?",
    "Is there anything else you need help with today?",
    "Can I help you with anything else?",
]


def method_words(method: Json) -> str:
    """How the agent names a payment method back to the user."""
    if method["source"] == "credit_card":
        return f"{method['brand']} credit card ending in {method['last_four']}"
    if method["source"] == "gift_card":
        return f"gift card ({method['id']})"
    return f"PayPal account ({method['id']})"


def opts(options: Json) -> str:
    return ", ".join(f"{k}: {v}" for k, v in options.items())


@dataclass
class Episode:
    """What one run produced: the messages and the write calls that succeeded."""

    messages: list[Json] = field(default_factory=list)
    writes: list[tuple[str, Json]] = field(default_factory=list)
    tool_errors: int = 0


class AgentSim:
    """Plays the agent side of one episode."""

    def __init__(
        self,
        tools: RetailTools,
        user: UserSim,
        requests: list[Request],
        rng: random.Random,
        mistake: str | None,
        mistake_at: int,
        other_pending: str | None,
    ) -> None:
        self.tools = tools
        self.user = user
        self.requests = requests
        self.rng = rng
        self.mistake = mistake
        self.mistake_at = mistake_at
        self.other_pending = other_pending
        self.ep = Episode()
        self.user_id = ""
        self.profile: Json = {}
        self.note = ""

    # -- message helpers ----------------------------------------------------------------------
    def say(self, text: str) -> None:
        """An assistant turn; a note held back (e.g. 'I found the order') leads it."""
        if self.note:
            text, self.note = f"{self.note} {text}", ""
        self.ep.messages.append({"role": "assistant", "content": text})

    def hear(self, text: str) -> None:
        self.ep.messages.append({"role": "user", "content": text})

    def tool(self, name: str, args: Json) -> str:
        """One tool call per assistant message, then its answer; successful writes are kept."""
        call_id = f"call_{self.rng.getrandbits(96):024x}"
        keys = list(args)
        if len(keys) > 1 and self.rng.random() < 0.3:
            self.rng.shuffle(keys)
        arguments = json.dumps({k: args[k] for k in keys})
        self.ep.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            }
        )
        answer = self.tools.call(name, args)
        self.ep.messages.append(
            {"role": "tool", "tool_call_id": call_id, "name": name, "content": answer}
        )
        if answer.startswith("Error"):
            self.ep.tool_errors += 1
        elif name in WRITE_TOOLS:
            self.ep.writes.append((name, json.loads(arguments)))
        return answer

    def _mistake_here(self, kind: str, index: int) -> bool:
        return self.mistake == kind and self.mistake_at == index

    # -- episode ------------------------------------------------------------------------------
    def run(self) -> Episode:
        """Authenticate, then serve the requests one after another."""
        self.hear(self.user.opening())
        self.say(self.rng.choice(ASK_ID))
        text, info = self.user.identity_answer(retry=False)
        self.hear(text)
        answer = self._lookup(info)
        if answer.startswith("Error"):
            self.say(
                self.rng.choice(
                    [
                        "I'm sorry, I couldn't find an account with those details. Could you "
                        "please double-check and provide them again?",
                        "I wasn't able to locate your account with that information. Could you "
                        "verify it for me?",
                    ]
                )
            )
            text, info = self.user.identity_answer(retry=True)
            self.hear(text)
            answer = self._lookup(info)
        self.user_id = answer
        self.profile = json.loads(self.tool("get_user_details", {"user_id": self.user_id}))
        for index, request in enumerate(self.requests):
            if self.mistake == TRANSFER and self.mistake_at == index:
                self._transfer(request)
                return self.ep
            self._serve(request, index)
            text, more = self.user.after_done(stated_next=self.user.upfront_two and index == 0)
            self.hear(text)
            if not more:
                break
        return self.ep

    def _lookup(self, info: Json) -> str:
        if "email" in info:
            return self.tool("find_user_id_by_email", {"email": info["email"]})
        return self.tool("find_user_id_by_name_zip", dict(info))

    def _transfer(self, request: Request) -> None:
        """Give up on a request the tools could handle: an incomplete, failed episode."""
        if request.kind != "modify_user_address" and self.rng.random() < 0.5:
            text, info = self.user.order_answer(request)
            self.say("Which order is this about? Please share the order id if you have it.")
            self.hear(text)
            if info.get("order_id"):
                self.tool("get_order_details", {"order_id": info["order_id"]})
        self.say(
            self.rng.choice(
                [
                    "I'm not able to complete this request myself. Let me transfer you to a human "
                    "agent who can help further.",
                    "This looks like something a human agent should handle. I'll transfer you now.",
                ]
            )
        )
        summary = f"User {self.user_id} wants help with: {request.kind.replace('_', ' ')}."
        self.tool("transfer_to_human_agents", {"summary": summary})
        self.say("You are being transferred to a human agent. Please hold on.")
        self.hear(self.user.after_transfer())

    def _find_order(self, request: Request, info: Json) -> Json:
        """Read the named order, or scan the user's orders for the one with the named items."""
        if info.get("order_id"):
            if self.rng.random() < 0.15 and len(self.profile["orders"]) > 1:
                other = self.rng.choice(
                    [o for o in self.profile["orders"] if o != info["order_id"]]
                )
                self.tool("get_order_details", {"order_id": other})
            return json.loads(self.tool("get_order_details", {"order_id": info["order_id"]}))
        candidates = list(self.profile["orders"])
        if self.rng.random() < 0.5:
            self.rng.shuffle(candidates)
        wanted = set(info["item_names"])
        for order_id in candidates:
            order = json.loads(self.tool("get_order_details", {"order_id": order_id}))
            names = {line["name"] for line in order["items"]}
            if wanted <= names and order["status"] == STATUS_NEEDED[request.kind]:
                found = (
                    f"I found order {order_id} ({order['status']}) with the "
                    + " and the ".join(sorted(wanted)).lower()
                    + " in it."
                )
                if self.rng.random() < 0.3:
                    self.say(found + " Is this the one?")
                    self.hear(
                        self.rng.choice(
                            ["Yes, that's the one I mean.", "Yes, that's it, thank you."]
                        )
                    )
                else:
                    self.note = found
                return order
        raise RuntimeError("scripted user pointed at an order that does not exist")

    def _serve(self, request: Request, index: int) -> None:
        """Collect details, confirm, write once, report."""
        kind = request.kind
        order: Json = {}
        if kind != "modify_user_address":
            first = [
                "Thank you, you're verified. Could you tell me the order id?",
                "Got it, I've found your account. What is the order id for this request?",
            ]
            later = [
                "Sure. Which order is this one about? Please share the order id.",
                "Of course. What is the order id for this request?",
            ]
            self.say(
                self.rng.choice(
                    (first if index == 0 else later)
                    + [
                        f"Thanks, {self.profile['name']['first_name']}. Which order is it? "
                        "The order id starts with #W.",
                    ]
                )
            )
            text, info = self.user.order_answer(request)
            self.hear(text)
            order = self._find_order(request, info)
        needs_pay = "payment_method_id" in request.kwargs and kind != "modify_pending_order_payment"
        combined = needs_pay and self.rng.random() < 0.55
        self.say(self._details_question(request, order, combined))
        text, details = self.user.details_answer(request, with_payment=combined)
        self.hear(text)
        if needs_pay and not combined:
            self.say(self._payment_question(request))
            text, pay = self.user.payment_answer(request)
            self.hear(text)
            details.update(pay)
        args = self._write_args(request, order, details, index)
        if self.rng.random() < 0.2:
            self.tool("think", {"thought": f"Plan: {kind} with {json.dumps(args)}; confirm first."})
        if kind != "modify_user_address" and self.rng.random() < 0.15:
            order = json.loads(self.tool("get_order_details", {"order_id": args["order_id"]}))
        if not self._mistake_here("missed_confirmation", index):
            self.say(self._confirmation(request, order, args))
            self.hear(self.user.confirm())
        if self._mistake_here("false_claim", index):
            answer = ""
        else:
            if self.rng.random() < 0.45:
                self._slip(kind, args)
            answer = self.tool(kind, args)
        report = self._report(request, args, answer)
        if self._mistake_here("unjustified_write", index) and self.other_pending:
            self.tool("get_order_details", {"order_id": self.other_pending})
            self.tool(
                "cancel_pending_order",
                {"order_id": self.other_pending, "reason": "no longer needed"},
            )
            report += (
                f" I also went ahead and cancelled your other pending order {self.other_pending}, "
                "since it looked like it was no longer needed."
            )
        self.say(f"{report} {self.rng.choice(ANYTHING_ELSE)}")

    def _slip(self, kind: str, args: Json) -> None:
        """A malformed first write that the tool rejects and the agent then corrects: a
        recovered error with no effect on the state, as real agents make."""
        bad = dict(args)
        if kind in ("modify_pending_order_items", "exchange_delivered_order_items") and (
            self.rng.random() < 0.4
        ):
            line = next(x for x in self.tools.db["orders"][args["order_id"]]["items"])
            bad["new_item_ids"] = [line["product_id"], *args["new_item_ids"][1:]]
        elif kind == "cancel_pending_order" and self.rng.random() < 0.4:
            bad["reason"] = self.rng.choice(["no longer need it", "mistake", "not needed"])
        elif "order_id" in args:
            bad["order_id"] = args["order_id"].lstrip("#")
        else:
            bad["user_id"] = args["user_id"].rsplit("_", 1)[0]
        self.tool(kind, bad)

    # -- wording ------------------------------------------------------------------------------
    def _details_question(self, request: Request, order: Json, combined: bool) -> str:
        kind = request.kind
        status = f"Order {order['order_id']} is {order['status']}. " if order else ""
        if kind == "cancel_pending_order":
            return status + (
                "Could you tell me the reason for the cancellation: 'no longer needed' or "
                "'ordered by mistake'?"
            )
        if kind in ("exchange_delivered_order_items", "modify_pending_order_items"):
            listed = "; ".join(f"{x['name']} ({opts(x['options'])})" for x in order["items"])
            ask = (
                f"{status}It contains: {listed}. Which items would you like to change, and to "
                "which options? Please list all of them, since this can only be done once."
            )
            if combined:
                ask += " Also, which payment method should be used for the price difference?"
            return ask
        if kind == "return_delivered_order_items":
            ask = f"{status}Which items would you like to return?"
            if combined:
                ask += (
                    " And where should the refund go: the original payment method or a gift card?"
                )
            return ask
        if kind == "modify_pending_order_payment":
            return status + "Which payment method would you like to use instead?"
        return status + "What is the new address you would like to use?"

    def _payment_question(self, request: Request) -> str:
        if request.kind == "return_delivered_order_items":
            return (
                "Which payment method should receive the refund? It can be the original payment "
                "method or a gift card."
            )
        return "Which payment method would you like to use to pay or receive the price difference?"

    def _write_args(self, request: Request, order: Json, details: Json, index: int) -> Json:
        """Build the single write call, with read-backs of products and optional maths."""
        kind = request.kind
        if kind == "cancel_pending_order":
            return {"order_id": order["order_id"], "reason": details["reason"]}
        if kind == "modify_pending_order_payment":
            return {
                "order_id": order["order_id"],
                "payment_method_id": details["payment_method_id"],
            }
        if kind in ("modify_pending_order_address", "modify_user_address"):
            head = (
                {"user_id": self.user_id}
                if kind == "modify_user_address"
                else {"order_id": order["order_id"]}
            )
            return {**head, **details["address"]}
        if kind == "return_delivered_order_items":
            item_ids = list(details["item_ids"])
            if self._mistake_here("wrong_item", index):
                others = [x["item_id"] for x in order["items"] if x["item_id"] not in item_ids]
                item_ids[self.rng.randrange(len(item_ids))] = self.rng.choice(others)
            if len(set(item_ids)) == len(item_ids) and self.rng.random() < 0.6:
                self.rng.shuffle(item_ids)
            return {
                "order_id": order["order_id"],
                "item_ids": item_ids,
                "payment_method_id": details["payment_method_id"],
            }
        pairs = list(details["pairs"])
        products = {x["product_id"] for x in order["items"] if x["item_id"] in dict(pairs)}
        product_order = sorted(products)
        self.rng.shuffle(product_order)
        catalog: Json = {}
        for product_id in product_order:
            catalog[product_id] = json.loads(
                self.tool("get_product_details", {"product_id": product_id})
            )
        if self._mistake_here("wrong_item", index):
            slot = self.rng.randrange(len(pairs))
            old, new = pairs[slot]
            line = next(x for x in order["items"] if x["item_id"] == old)
            wrong = [
                v["item_id"]
                for v in catalog[line["product_id"]]["variants"].values()
                if v["available"] and v["item_id"] not in (old, new)
            ]
            pairs[slot] = (old, self.rng.choice(sorted(wrong)))
        if len({p[0] for p in pairs}) == len(pairs) and self.rng.random() < 0.6:
            self.rng.shuffle(pairs)
        if self.rng.random() < 0.3:
            line_of = {x["item_id"]: x for x in order["items"]}
            new_prices = [
                catalog[line_of[o]["product_id"]]["variants"][n]["price"] for o, n in pairs
            ]
            old_prices = [line_of[o]["price"] for o, _ in pairs]
            expression = (
                f"({' + '.join(map(str, new_prices))}) - ({' + '.join(map(str, old_prices))})"
            )
            self.tool("calculate", {"expression": expression})
        return {
            "order_id": order["order_id"],
            "item_ids": [p[0] for p in pairs],
            "new_item_ids": [p[1] for p in pairs],
            "payment_method_id": details["payment_method_id"],
        }

    def _confirmation(self, request: Request, order: Json, args: Json) -> str:
        """List the action detail and ask for an explicit yes, as the policy demands."""
        kind = request.kind
        pay = args.get("payment_method_id")
        method = method_words(self.profile["payment_methods"][pay]) if pay else ""
        if kind == "cancel_pending_order":
            body = (
                f"To confirm: I will cancel order {args['order_id']} with the reason "
                f"'{args['reason']}'. The total will be refunded to the original payment method."
            )
        elif kind in ITEM_KINDS and kind != "return_delivered_order_items":
            lines = []
            for old, new in zip(args["item_ids"], args["new_item_ids"], strict=True):
                line = next(x for x in order["items"] if x["item_id"] == old)
                variant = self.tools.db["products"][line["product_id"]]["variants"][new]
                lines.append(
                    f"- {line['name']}: ({opts(line['options'])}) -> ({opts(variant['options'])})"
                )
            verb = "exchange" if kind.startswith("exchange") else "modify"
            body = (
                f"Here is what I will {verb} in order {args['order_id']}:\n"
                + "\n".join(lines)
                + f"\nThe price difference will be settled with your {method}. Please make sure "
                "these are all the items you want to change."
            )
        elif kind == "return_delivered_order_items":
            names = [
                next(x["name"] for x in order["items"] if x["item_id"] == i)
                for i in args["item_ids"]
            ]
            body = (
                f"I will request a return of {', '.join(names)} from order {args['order_id']}, "
                f"with the refund going to your {method}."
            )
        elif kind == "modify_pending_order_payment":
            body = f"I will change the payment method of order {args['order_id']} to your {method}."
        else:
            target = f"order {args['order_id']}" if "order_id" in args else "your account"
            body = (
                f"I will update the address of {target} to {args['address1']}, "
                f"{args['address2']}, {args['city']}, {args['state']} {args['zip']}, "
                f"{args['country']}."
            )
        return (
            body
            + " "
            + self.rng.choice(
                ["Do you want to proceed (yes/no)?", "Shall I go ahead? Please confirm with yes."]
            )
        )

    def _report(self, request: Request, args: Json, answer: str) -> str:
        """Tell the user the result; on a false claim this is said without any write."""
        if answer.startswith("Error"):
            return f"I'm sorry, the request could not be completed: {answer}."
        done = {
            "cancel_pending_order": "has been cancelled. The refund will be processed to the "
            "original payment method",
            "modify_pending_order_items": "has been modified successfully, and the price "
            "difference has been settled",
            "exchange_delivered_order_items": "has been updated: your exchange is requested, and "
            "you'll receive an email with instructions for sending the items back",
            "return_delivered_order_items": "has been updated: your return is requested, and "
            "you'll receive an email about how to return the items",
            "modify_pending_order_address": "now ships to the new address",
            "modify_pending_order_payment": "now uses the new payment method",
        }
        if request.kind == "modify_user_address":
            return "Your default address has been updated successfully."
        return f"Done! Order {args['order_id']} {done[request.kind]}."
