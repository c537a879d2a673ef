"""A scripted customer that plays one τ-bench retail task.

It knows the task's intent (from the ground-truth actions and the instruction) and reveals it only
when asked, in long, paraphrased turns, so generated traces read like τ-bench's LLM-simulated
users rather than like a form. Every wording choice goes through the episode's seeded RNG.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]

ITEM_KINDS = (
    "exchange_delivered_order_items",
    "modify_pending_order_items",
    "return_delivered_order_items",
)


@dataclass
class Request:
    """One write the user wants, with everything needed to describe it in words."""

    kind: str
    kwargs: Json
    lines: list[Json] = field(default_factory=list)  # order lines concerned (old items)
    new_variants: list[Json] = field(default_factory=list)  # target variants, same positions
    knows_order_id: bool = True


@dataclass
class Identity:
    """How the user authenticates: by email, or by name and zip."""

    first_name: str
    last_name: str
    zip: str | None
    email: str | None


def parse_identity(instruction: str) -> Identity:
    """Pull the name and the zip or email out of a τ-bench instruction."""
    name = re.search(r"Your name is (\S+) (\S+?)(?: and|\.)", instruction)
    zip_code = re.search(r"zip code is (\d{5})", instruction)
    email = re.search(r"email is (\S+?@\S+?\.com)", instruction)
    if name is None:
        raise ValueError("instruction without a name")
    return Identity(
        name.group(1),
        name.group(2),
        zip_code.group(1) if zip_code else None,
        email.group(1) if email else None,
    )


def parse_persona(instruction: str) -> list[str]:
    """The adjectives after 'You are', which set the user's tone."""
    match = re.search(r"You are ([a-z ,]+)\.", instruction)
    return [w.strip() for w in match.group(1).split(",")] if match else []


def opts_text(options: Json, rng: random.Random) -> str:
    """Options as a person would say them, in a varied form."""
    parts = list(options.items())
    style = rng.randrange(3)
    if style == 0:
        words = [f"{v} {k}" if k not in ("size", "capacity") else f"{k} {v}" for k, v in parts]
    elif style == 1:
        words = [f"{k} {v}" for k, v in parts]
    else:
        words = [f"{k}: {v}" for k, v in parts]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


def payment_words(method: Json, methods: list[Json], rng: random.Random) -> str:
    """Name a payment method the way customers do ('my visa ending 1234', 'the gift card')."""
    source = method["source"]
    if source == "credit_card":
        brand = method["brand"] if rng.random() < 0.5 else method["brand"].capitalize()
        end = rng.choice(["ending in", "ending", "that ends in"])
        return f"my {brand} {end} {method['last_four']}"
    same = [m for m in methods if m["source"] == source]
    if source == "gift_card":
        if len(same) == 1:
            return rng.choice(["the gift card", "my gift card", "the gift card on my account"])
        return f"the gift card with ${method['balance']} on it"
    if len(same) == 1:
        return rng.choice(["my PayPal", "PayPal", "my PayPal account"])
    return f"the PayPal account {method['id']}"


def address_words(address: Json) -> str:
    """A postal address in one line."""
    second = f", {address['address2']}" if address.get("address2") else ""
    return (
        f"{address['address1']}{second}, {address['city']}, {address['state']} "
        f"{address['zip']}, {address['country']}"
    )


OPENINGS = {
    "cancel_pending_order": [
        "I'd like to cancel an order I placed{about}.",
        "I need to cancel one of my orders{about}, please.",
        "I want to cancel an order{about} that hasn't shipped yet.",
        "could you help me cancel a pending order{about}?",
    ],
    "modify_pending_order_items": [
        "I'd like to change some items in an order{about} that hasn't shipped yet.",
        "I need to modify an item in a pending order{about}, I picked the wrong option.",
        "I want to swap the options on something I ordered{about} before it ships.",
    ],
    "exchange_delivered_order_items": [
        "I'd like to exchange something I received{about}.",
        "I need to exchange an item from a delivered order{about} for a different option.",
        "I got my order{about} but I'd like to exchange an item for another variant.",
    ],
    "return_delivered_order_items": [
        "I'd like to return some items from an order{about}.",
        "I need to return a few things I received{about}.",
        "I want to send back an item from a delivered order{about} and get a refund.",
    ],
    "modify_pending_order_address": [
        "I need to change the shipping address on one of my orders{about}.",
        "I'd like to update the delivery address for a pending order{about}.",
    ],
    "modify_pending_order_payment": [
        "I'd like to change the payment method on an order{about}.",
        "I want to pay for one of my pending orders{about} with a different method.",
    ],
    "modify_user_address": [
        "I moved recently and need to update the default address on my account.",
        "I'd like to change the address saved on my profile.",
    ],
}
GREETINGS = ["Hi!", "Hello,", "Hi there,", "Hey,", "Good morning,", "Hello there!", ""]
CUES = [
    "Great, thanks! I also need to",
    "Thanks for that. Also, could you help me",
    "Perfect. Next, I'd like to",
    "That's great, thank you. One more thing, I want to",
    "Awesome. I also have another request: I'd like to",
    "Thank you! Also, I wanted to",
]
SHORT_ASK = {
    "cancel_pending_order": "cancel another order{about}",
    "modify_pending_order_items": "change an item in a pending order{about}",
    "exchange_delivered_order_items": "exchange an item from an order{about}",
    "return_delivered_order_items": "return something from an order{about}",
    "modify_pending_order_address": "change the shipping address of an order{about}",
    "modify_pending_order_payment": "switch the payment method on an order{about}",
    "modify_user_address": "update the default address on my account",
}
YES = [
    "Yes, that's correct. Please go ahead with it.",
    "Yes, please proceed. Everything you listed looks right to me.",
    "Yes, I confirm. Please go ahead and make the change.",
    "Yes. That is everything, you can go ahead.",
    "Yes please, that all sounds right. Go ahead.",
    "That's right, yes. Please proceed with that.",
    "Yes, I've given you all the items. Go ahead please.",
]
THANKS = [
    "Thank you, that's all I needed.",
    "No, that's everything. Thanks so much for your help!",
    "That's all for today, thank you for your help. Goodbye!",
    "Nope, that covers it. Thanks a lot, have a great day!",
    "That's it, thanks! I appreciate the quick help.",
    "No, I'm all set. Thank you and goodbye.",
]
CURT = ["No, that's everything for now.", "Nope, that was it. Have a good one."]
FILLERS = {
    "polite": ["Thank you so much.", "I really appreciate it.", "Thanks in advance."],
    "impatient": ["Please be quick, I'm in a hurry.", "I don't have much time."],
    "busy": ["I'm a bit busy so I'd like to get this sorted fast.", "I need this done quickly."],
    "curious": ["How long does that usually take?", "Just curious how this works."],
    "pessimistic": ["I hope this won't be complicated.", "I doubt it's simple, but let's try."],
    "cautious": ["I want to make sure nothing else changes.", "Please double-check that."],
    "messy": ["sorry, my notes are all over the place.", "I had it written down somewhere."],
    "confident": ["I know exactly what I want.", "This should be straightforward."],
}


class UserSim:
    """Plays one task: paraphrases on every run, answers questions, confirms, says goodbye."""

    def __init__(
        self,
        identity: Identity,
        persona: list[str],
        requests: list[Request],
        user: Json,
        rng: random.Random,
        typo: bool,
        upfront_two: bool,
    ) -> None:
        self.identity = identity
        self.persona = persona
        self.requests = requests
        self.user = user
        self.rng = rng
        self.typo = typo
        self.upfront_two = upfront_two
        self.methods = list(user["payment_methods"].values())
        self.current = 0

    # -- wording helpers ----------------------------------------------------------------------
    def _filler(self, chance: float = 0.35) -> str:
        moods = [p for p in self.persona if p in FILLERS]
        if not moods or self.rng.random() > chance:
            return ""
        return " " + self.rng.choice(FILLERS[self.rng.choice(moods)])

    def _about(self, request: Request) -> str:
        """A short hint at which order: by item names, or nothing."""
        names = sorted({line["name"] for line in request.lines})
        if not names or self.rng.random() < 0.3:
            return ""
        return " with the " + " and the ".join(n.lower() for n in names)

    def _item_phrase(self, line: Json) -> str:
        return f"the {line['name'].lower()} ({opts_text(line['options'], self.rng)})"

    def _change_phrase(self, line: Json, variant: Json) -> str:
        changed = {k: v for k, v in variant["options"].items() if line["options"].get(k) != v}
        target = changed if changed and self.rng.random() < 0.7 else variant["options"]
        return self.rng.choice(
            [
                f"{self._item_phrase(line)} should become {opts_text(target, self.rng)}",
                f"for {self._item_phrase(line)}, I want {opts_text(target, self.rng)} instead",
                f"I'd like {self._item_phrase(line)} switched to {opts_text(target, self.rng)}",
            ]
        )

    def _pay(self, request: Request) -> str:
        method = self.user["payment_methods"][request.kwargs["payment_method_id"]]
        return payment_words(method, self.methods, self.rng)

    def _ask_sentence(self, request: Request, opening: bool) -> str:
        template = self.rng.choice(OPENINGS[request.kind] if opening else [SHORT_ASK[request.kind]])
        return template.format(about=self._about(request))

    # -- turns --------------------------------------------------------------------------------
    def opening(self) -> str:
        """First message: the first request (or two), vaguely, as customers open a chat."""
        first = self._ask_sentence(self.requests[0], opening=True)
        text = f"{self.rng.choice(GREETINGS)} {first[0].upper()}{first[1:]}".strip()
        if self.upfront_two and len(self.requests) > 1:
            second = self._ask_sentence(self.requests[1], opening=False)
            text += (
                " " + self.rng.choice(["Also, I need to", "And I'd also like to"]) + f" {second}."
            )
        return text + self._filler(0.5)

    def identity_answer(self, retry: bool) -> tuple[str, Json]:
        """Give email or name+zip; the first try may carry a typo that the agent cannot find."""
        ident = self.identity
        typo = self.typo and not retry
        if ident.email:
            email = ident.email
            if typo:
                local, _, domain = email.partition("@")
                email = f"{local[:-1]}{int(local[-1]) + 1 if local[-1].isdigit() else 'x'}@{domain}"
            lead = "Sorry about that, let me check again. It should be" if retry else "Sure, it's"
            text = self.rng.choice(
                [
                    f"{lead} {email}. That's the email I used when I signed up for my account.",
                    f"{lead} {email}, that's the address I always use for my orders with you.",
                ]
            )
            return text, {"email": email}
        zip_code = ident.zip or ""
        if typo:
            zip_code = zip_code[:-1] + str((int(zip_code[-1]) + 3) % 10)
        if retry:
            text = self.rng.choice(
                [
                    f"Oh, sorry, I must have mistyped it. It's {ident.first_name} "
                    f"{ident.last_name} and the zip code is {zip_code}.",
                    f"My apologies, let me try again: {ident.first_name} {ident.last_name}, "
                    f"zip code {zip_code}. That should be right now.",
                ]
            )
        else:
            text = self.rng.choice(
                [
                    f"Sure, my name is {ident.first_name} {ident.last_name} and my zip code is "
                    f"{zip_code}. I don't remember which email I used.",
                    f"Of course. I'm {ident.first_name} {ident.last_name}, and my zip is "
                    f"{zip_code}.",
                    f"My name is {ident.first_name} {ident.last_name}, zip code {zip_code}. "
                    "I'd rather not use my email if that's okay.",
                ]
            )
        return text + self._filler(0.2), {
            "first_name": ident.first_name,
            "last_name": ident.last_name,
            "zip": zip_code,
        }

    def order_answer(self, request: Request) -> tuple[str, Json]:
        """Say which order: its id, or only what was in it when the id is not at hand."""
        if request.knows_order_id or not request.lines:
            oid = request.kwargs["order_id"]
            text = self.rng.choice(
                [
                    f"The order number is {oid}.",
                    f"Yes, it's order {oid}, I have the confirmation email right here.",
                    f"It's {oid}. I just checked my email to be sure.",
                ]
            )
            return text + self._filler(0.3), {"order_id": oid}
        names = sorted({line["name"] for line in request.lines})
        text = self.rng.choice(
            [
                "I don't have the order number handy, sorry. It's the one with the "
                + " and the ".join(n.lower() for n in names)
                + " in it.",
                "I can't find the order id right now. Could you look it up? It had the "
                + " and the ".join(n.lower() for n in names)
                + ".",
            ]
        )
        return text, {"order_id": None, "item_names": names}

    def details_answer(self, request: Request, with_payment: bool) -> tuple[str, Json]:
        """What to change, in one long turn; numbered when answering several questions."""
        kw = request.kwargs
        info: Json = {}
        parts: list[str] = []
        if request.kind == "cancel_pending_order":
            parts.append(
                self.rng.choice(
                    [
                        f"The reason is that it's {kw['reason']}",
                        f"I'd say {kw['reason']}, to be honest",
                        f"It was {kw['reason']}"
                        if "mistake" in kw["reason"]
                        else "I simply don't need it anymore, so no longer needed",
                    ]
                )
            )
            info["reason"] = kw["reason"]
        elif request.kind in ("exchange_delivered_order_items", "modify_pending_order_items"):
            changes = [
                self._change_phrase(line, v)
                for line, v in zip(request.lines, request.new_variants, strict=True)
            ]
            parts.append("; ".join(changes))
            info["pairs"] = [
                (line["item_id"], v["item_id"])
                for line, v in zip(request.lines, request.new_variants, strict=True)
            ]
            if len(changes) > 1:
                parts.append("those are all the items I want to change")
        elif request.kind == "return_delivered_order_items":
            parts.append(
                "I want to return " + ", ".join(self._item_phrase(x) for x in request.lines)
            )
            info["item_ids"] = [line["item_id"] for line in request.lines]
        elif request.kind in ("modify_pending_order_address", "modify_user_address"):
            address = {
                k: kw[k] for k in ("address1", "address2", "city", "state", "country", "zip")
            }
            parts.append(f"The new address is {address_words(address)}")
            info["address"] = address
        elif request.kind == "modify_pending_order_payment":
            parts.append(f"I'd like to pay with {self._pay(request)} instead")
            info["payment_method_id"] = kw["payment_method_id"]
        if with_payment and "payment_method_id" in kw and "payment_method_id" not in info:
            verb = "refund" if request.kind == "return_delivered_order_items" else "difference"
            parts.append(
                f"please use {self._pay(request)} for the {verb}"
                if self.rng.random() < 0.5
                else f"the {verb} can go to {self._pay(request)}"
            )
            info["payment_method_id"] = kw["payment_method_id"]
        if len(parts) > 1 and self.rng.random() < 0.5:
            text = " ".join(f"{i}. {p[0].upper()}{p[1:]}." for i, p in enumerate(parts, 1))
        else:
            text = ". ".join(p[0].upper() + p[1:] for p in parts) + "."
        return text + self._filler(0.4), info

    def payment_answer(self, request: Request) -> tuple[str, Json]:
        """Which payment method to use, in words."""
        verb = "refund" if request.kind == "return_delivered_order_items" else "price difference"
        text = self.rng.choice(
            [
                f"Please use {self._pay(request)} for the {verb}, that works best for me.",
                f"I'd like the {verb} to go through {self._pay(request)}, if that's possible.",
                f"Let's use {self._pay(request)} for that. That's the one I prefer to use.",
            ]
        )
        return text + self._filler(0.3), {"payment_method_id": request.kwargs["payment_method_id"]}

    def confirm(self) -> str:
        """Explicit yes, as the policy requires."""
        return self.rng.choice(YES) + self._filler(0.25)

    def after_done(self, stated_next: bool) -> tuple[str, bool]:
        """After a request is done: turn to the next one with a cue, or thank and leave."""
        self.current += 1
        if self.current < len(self.requests) and not stated_next:
            ask = SHORT_ASK[self.requests[self.current].kind].format(
                about=self._about(self.requests[self.current])
            )
            return f"{self.rng.choice(CUES)} {ask}.", True
        if self.current < len(self.requests):
            return self.rng.choice(
                ["Yes, please go ahead with the second thing I mentioned.", "Yes, the other one."]
            ) + " " + self.rng.choice(["Thanks!", "Let's do that now."]), True
        return self.goodbye(), False

    def goodbye(self) -> str:
        """Thanks, sometimes with τ-bench's stop token."""
        text = self.rng.choice(CURT if self.rng.random() < 0.1 else THANKS)
        return text + ("###STOP###" if self.rng.random() < 0.4 else "")

    def after_transfer(self) -> str:
        """The user accepts the hand-off."""
        return self.rng.choice(
            ["Okay, I'll wait for the human agent then. Thanks.", "Alright, thank you.###STOP###"]
        )
