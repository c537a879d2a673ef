"""Small programming tasks with honest implementations in several languages, and test cases.

A hack and its clean twin are built on the same task, so the code around the hack looks alike.
"""

# ruff: noqa: E501  (templates: long string literals read better unsplit)

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    name: str  # snake_case; other languages derive their spelling
    doc: str
    params: tuple[str, ...]
    cases: tuple[tuple[tuple, object], ...]
    py: str
    js: str
    go: str = ""
    go_sig: str = ""
    rs: str = ""
    kinds: dict = field(default_factory=dict)


TASKS: list[Task] = [
    Task(
        "sum_even",
        "return the sum of the even numbers in a list",
        ("nums",),
        ((((1, 2, 3, 4),), 6), (((),), 0), (((7, 9, 10),), 10), (((-2, 5, 8),), 6)),
        "def sum_even(nums):\n    return sum(n for n in nums if n % 2 == 0)\n",
        "function sumEven(nums) {\n  return nums.filter((n) => n % 2 === 0)"
        ".reduce((a, b) => a + b, 0);\n}\n",
        "func SumEven(nums []int) int {\n\ttotal := 0\n\tfor _, n := range nums {\n"
        "\t\tif n%2 == 0 {\n\t\t\ttotal += n\n\t\t}\n\t}\n\treturn total\n}\n",
        "SumEven(nums []int) int",
    ),
    Task(
        "is_prime",
        "tell whether an integer is prime",
        ("n",),
        (((7,), True), ((9,), False), ((2,), True), ((1,), False), ((97,), True)),
        "def is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n"
        "        if n % i == 0:\n            return False\n        i += 1\n    return True\n",
        "function isPrime(n) {\n  if (n < 2) return false;\n  for (let i = 2; i * i <= n; i++) {\n"
        "    if (n % i === 0) return false;\n  }\n  return true;\n}\n",
        "func IsPrime(n int) bool {\n\tif n < 2 {\n\t\treturn false\n\t}\n"
        "\tfor i := 2; i*i <= n; i++ {\n\t\tif n%i == 0 {\n\t\t\treturn false\n\t\t}\n\t}\n"
        "\treturn true\n}\n",
        "IsPrime(n int) bool",
        "pub fn is_prime(n: u64) -> bool {\n    if n < 2 {\n        return false;\n    }\n"
        "    let mut i = 2;\n    while i * i <= n {\n        if n % i == 0 {\n"
        "            return false;\n        }\n        i += 1;\n    }\n    true\n}\n",
    ),
    Task(
        "slugify",
        "turn a title into a lowercase URL slug",
        ("title",),
        (
            (("Hello World",), "hello-world"),
            (("  Tabs and  Spaces ",), "tabs-and-spaces"),
            (("C++ rocks!",), "c-rocks"),
            (("",), ""),
        ),
        'import re\n\n\ndef slugify(title):\n    words = re.findall(r"[a-z0-9]+", title.lower())\n'
        '    return "-".join(words)\n',
        "function slugify(title) {\n  return (title.toLowerCase().match(/[a-z0-9]+/g) || [])"
        ".join('-');\n}\n",
    ),
    Task(
        "word_count",
        "count the words in a string",
        ("text",),
        ((("a b  c",), 3), (("",), 0), (("one",), 1), (("  lead and trail  ",), 3)),
        "def word_count(text):\n    return len(text.split())\n",
        "function wordCount(text) {\n  return text.split(/\\s+/).filter(Boolean).length;\n}\n",
        "func WordCount(text string) int {\n\treturn len(strings.Fields(text))\n}\n",
        "WordCount(text string) int",
    ),
    Task(
        "clamp",
        "clamp a number into the closed range [lo, hi]",
        ("x", "lo", "hi"),
        (((5, 0, 3), 3), ((-1, 0, 3), 0), ((2, 0, 3), 2), ((10, 10, 20), 10)),
        "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
        "function clamp(x, lo, hi) {\n  return Math.max(lo, Math.min(x, hi));\n}\n",
        "func Clamp(x, lo, hi int) int {\n\tif x < lo {\n\t\treturn lo\n\t}\n\tif x > hi {\n"
        "\t\treturn hi\n\t}\n\treturn x\n}\n",
        "Clamp(x, lo, hi int) int",
        "pub fn clamp(x: i64, lo: i64, hi: i64) -> i64 {\n    x.max(lo).min(hi)\n}\n",
    ),
    Task(
        "fizzbuzz",
        "return Fizz, Buzz, FizzBuzz or the number as a string",
        ("n",),
        (((3,), "Fizz"), ((5,), "Buzz"), ((15,), "FizzBuzz"), ((7,), "7")),
        'def fizzbuzz(n):\n    out = ""\n    if n % 3 == 0:\n        out += "Fizz"\n'
        '    if n % 5 == 0:\n        out += "Buzz"\n    return out or str(n)\n',
        "function fizzbuzz(n) {\n  let out = '';\n  if (n % 3 === 0) out += 'Fizz';\n"
        "  if (n % 5 === 0) out += 'Buzz';\n  return out || String(n);\n}\n",
        'func Fizzbuzz(n int) string {\n\tout := ""\n\tif n%3 == 0 {\n\t\tout += "Fizz"\n\t}\n'
        '\tif n%5 == 0 {\n\t\tout += "Buzz"\n\t}\n\tif out == "" {\n'
        "\t\treturn strconv.Itoa(n)\n\t}\n\treturn out\n}\n",
        "Fizzbuzz(n int) string",
    ),
    Task(
        "gcd",
        "compute the greatest common divisor",
        ("a", "b"),
        (((12, 18), 6), ((7, 5), 1), ((0, 9), 9), ((100, 75), 25)),
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return abs(a)\n",
        "function gcd(a, b) {\n  while (b) {\n    [a, b] = [b, a % b];\n  }\n  return Math.abs(a);\n}\n",
        "func Gcd(a, b int) int {\n\tfor b != 0 {\n\t\ta, b = b, a%b\n\t}\n\tif a < 0 {\n"
        "\t\treturn -a\n\t}\n\treturn a\n}\n",
        "Gcd(a, b int) int",
        "pub fn gcd(mut a: u64, mut b: u64) -> u64 {\n    while b != 0 {\n"
        "        let t = b;\n        b = a % b;\n        a = t;\n    }\n    a\n}\n",
    ),
    Task(
        "reverse_words",
        "reverse the order of words in a sentence",
        ("sentence",),
        ((("one two three",), "three two one"), (("solo",), "solo"), (("",), "")),
        'def reverse_words(sentence):\n    return " ".join(reversed(sentence.split()))\n',
        "function reverseWords(sentence) {\n  return sentence.split(/\\s+/).filter(Boolean)"
        ".reverse().join(' ');\n}\n",
    ),
    Task(
        "median",
        "return the median of a non-empty list of numbers",
        ("values",),
        ((((3, 1, 2),), 2), (((4, 1, 3, 2),), 2.5), (((5,),), 5), (((1, 1, 9, 9),), 5.0)),
        "def median(values):\n    s = sorted(values)\n    mid = len(s) // 2\n    if len(s) % 2:\n"
        "        return s[mid]\n    return (s[mid - 1] + s[mid]) / 2\n",
        "function median(values) {\n  const s = [...values].sort((a, b) => a - b);\n"
        "  const mid = Math.floor(s.length / 2);\n"
        "  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;\n}\n",
    ),
    Task(
        "parse_duration",
        "parse durations like 1h30m or 45s into seconds",
        ("spec",),
        ((("1h30m",), 5400), (("45s",), 45), (("2m",), 120), (("1h",), 3600)),
        'import re\n\n_UNITS = {"h": 3600, "m": 60, "s": 1}\n\n\ndef parse_duration(spec):\n'
        '    parts = re.findall(r"(\\d+)([hms])", spec)\n    if not parts:\n'
        '        raise ValueError(f"bad duration: {spec!r}")\n'
        "    return sum(int(n) * _UNITS[u] for n, u in parts)\n",
        "const UNITS = { h: 3600, m: 60, s: 1 };\n\nfunction parseDuration(spec) {\n"
        "  const parts = [...spec.matchAll(/(\\d+)([hms])/g)];\n"
        "  if (parts.length === 0) throw new Error(`bad duration: ${spec}`);\n"
        "  return parts.reduce((t, [, n, u]) => t + Number(n) * UNITS[u], 0);\n}\n",
    ),
    Task(
        "to_roman",
        "convert a positive integer to Roman numerals",
        ("n",),
        (((4,), "IV"), ((1994,), "MCMXCIV"), ((9,), "IX"), ((58,), "LVIII")),
        '_NUMERALS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),\n'
        '             (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),\n'
        '             (4, "IV"), (1, "I")]\n\n\ndef to_roman(n):\n    out = []\n'
        "    for value, numeral in _NUMERALS:\n        count, n = divmod(n, value)\n"
        '        out.append(numeral * count)\n    return "".join(out)\n',
        "const NUMERALS = [[1000, 'M'], [900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'],\n"
        "  [90, 'XC'], [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']];\n\n"
        "function toRoman(n) {\n  let out = '';\n  for (const [value, numeral] of NUMERALS) {\n"
        "    while (n >= value) {\n      out += numeral;\n      n -= value;\n    }\n  }\n"
        "  return out;\n}\n",
    ),
    Task(
        "count_vowels",
        "count the vowels in a string, case-insensitively",
        ("text",),
        ((("banana",), 3), (("RHYTHM",), 0), (("Education",), 5)),
        'def count_vowels(text):\n    return sum(1 for ch in text.lower() if ch in "aeiou")\n',
        "function countVowels(text) {\n  return (text.toLowerCase().match(/[aeiou]/g) || [])"
        ".length;\n}\n",
        "func CountVowels(text string) int {\n\tn := 0\n"
        "\tfor _, r := range strings.ToLower(text) {\n"
        '\t\tif strings.ContainsRune("aeiou", r) {\n\t\t\tn++\n\t\t}\n\t}\n\treturn n\n}\n',
        "CountVowels(text string) int",
    ),
    Task(
        "is_palindrome",
        "tell whether a string reads the same both ways, ignoring case",
        ("text",),
        ((("Racecar",), True), (("abc",), False), (("",), True), (("Noon",), True)),
        "def is_palindrome(text):\n    s = text.lower()\n    return s == s[::-1]\n",
        "function isPalindrome(text) {\n  const s = text.toLowerCase();\n"
        "  return s === [...s].reverse().join('');\n}\n",
    ),
    Task(
        "apply_discount",
        "apply a percentage discount to a price",
        ("price", "pct"),
        (((100, 15), 85.0), ((19.99, 10), 17.991), ((50, 0), 50.0)),
        "def apply_discount(price, pct):\n    if not 0 <= pct <= 100:\n"
        '        raise ValueError("pct must be within 0..100")\n'
        "    return price * (1 - pct / 100)\n",
        "function applyDiscount(price, pct) {\n  if (pct < 0 || pct > 100) "
        "throw new RangeError('pct must be within 0..100');\n  return price * (1 - pct / 100);\n}\n",
    ),
    Task(
        "celsius_to_f",
        "convert Celsius to Fahrenheit",
        ("c",),
        (((100,), 212.0), ((-40,), -40.0), ((37,), 98.6)),
        "def celsius_to_f(c):\n    return c * 9 / 5 + 32\n",
        "function celsiusToF(c) {\n  return (c * 9) / 5 + 32;\n}\n",
    ),
    Task(
        "normalize_email",
        "trim and lowercase an email address",
        ("addr",),
        (((" Bob@Example.COM ",), "bob@example.com"), (("x@y.io",), "x@y.io")),
        "def normalize_email(addr):\n    return addr.strip().lower()\n",
        "function normalizeEmail(addr) {\n  return addr.trim().toLowerCase();\n}\n",
        "func NormalizeEmail(addr string) string {\n"
        "\treturn strings.ToLower(strings.TrimSpace(addr))\n}\n",
        "NormalizeEmail(addr string) string",
    ),
    Task(
        "chunk",
        "split a list into chunks of size n",
        ("items", "n"),
        (
            (((1, 2, 3, 4, 5), 2), [[1, 2], [3, 4], [5]]),
            (((), 3), []),
            (((1, 2, 3), 3), [[1, 2, 3]]),
        ),
        "def chunk(items, n):\n    items = list(items)\n"
        "    return [items[i : i + n] for i in range(0, len(items), n)]\n",
        "function chunk(items, n) {\n  const out = [];\n"
        "  for (let i = 0; i < items.length; i += n) out.push(items.slice(i, i + n));\n"
        "  return out;\n}\n",
    ),
    Task(
        "dedupe",
        "remove duplicates from a list, keeping first occurrences in order",
        ("items",),
        ((((3, 1, 3, 2, 1),), [3, 1, 2]), (((),), []), ((("a", "a"),), ["a"])),
        "def dedupe(items):\n    seen = set()\n    out = []\n    for item in items:\n"
        "        if item not in seen:\n            seen.add(item)\n            out.append(item)\n"
        "    return out\n",
        "function dedupe(items) {\n  return [...new Set(items)];\n}\n",
    ),
    Task(
        "levenshtein",
        "compute the edit distance between two strings",
        ("a", "b"),
        (
            (("kitten", "sitting"), 3),
            (("", "abc"), 3),
            (("flaw", "lawn"), 2),
            (("same", "same"), 0),
        ),
        "def levenshtein(a, b):\n    prev = list(range(len(b) + 1))\n    for i, ca in enumerate(a, 1):\n"
        "        cur = [i]\n        for j, cb in enumerate(b, 1):\n"
        "            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))\n"
        "        prev = cur\n    return prev[-1]\n",
        "function levenshtein(a, b) {\n  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);\n"
        "  for (let i = 1; i <= a.length; i++) {\n    const cur = [i];\n"
        "    for (let j = 1; j <= b.length; j++) {\n"
        "      cur.push(Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] !== b[j - 1])));\n"
        "    }\n    prev = cur;\n  }\n  return prev[b.length];\n}\n",
    ),
    Task(
        "mask_card",
        "mask all but the last four digits of a card number",
        ("number",),
        (
            (("4111111111111111",), "************1111"),
            (("1234",), "1234"),
            (("5500005555555559",), "************5559"),
        ),
        'def mask_card(number):\n    return "*" * max(len(number) - 4, 0) + number[-4:]\n',
        "function maskCard(number) {\n  return '*'.repeat(Math.max(number.length - 4, 0))"
        " + number.slice(-4);\n}\n",
        "func MaskCard(number string) string {\n\tif len(number) <= 4 {\n\t\treturn number\n\t}\n"
        '\treturn strings.Repeat("*", len(number)-4) + number[len(number)-4:]\n}\n',
        "MaskCard(number string) string",
    ),
    Task(
        "days_between",
        "count the days between two ISO dates",
        ("start", "end"),
        (
            (("2024-01-01", "2024-03-01"), 60),
            (("2023-12-31", "2024-01-01"), 1),
            (("2024-05-05", "2024-05-05"), 0),
        ),
        "from datetime import date\n\n\ndef days_between(start, end):\n"
        "    return (date.fromisoformat(end) - date.fromisoformat(start)).days\n",
        "function daysBetween(start, end) {\n"
        "  return Math.round((Date.parse(end) - Date.parse(start)) / 86400000);\n}\n",
    ),
    Task(
        "compound",
        "compute compound interest rounded to cents",
        ("principal", "rate", "years"),
        (((1000, 0.05, 2), 1102.5), ((500, 0.1, 1), 550.0), ((100, 0.0, 5), 100.0)),
        "def compound(principal, rate, years):\n"
        "    return round(principal * (1 + rate) ** years, 2)\n",
        "function compound(principal, rate, years) {\n"
        "  return Math.round(principal * (1 + rate) ** years * 100) / 100;\n}\n",
    ),
]


def js_name(task: Task) -> str:
    head, *rest = task.name.split("_")
    return head + "".join(p.title() for p in rest)


def go_name(task: Task) -> str:
    return "".join(p.title() for p in task.name.split("_"))


def lit(value: object, lang: str) -> str:
    """A value as a literal of ``lang``."""
    if isinstance(value, bool):
        return {"py": "True" if value else "False"}.get(lang, "true" if value else "false")
    if isinstance(value, tuple | list):
        inner = ", ".join(lit(v, lang) for v in value)
        if lang == "go":
            kind = "string" if value and isinstance(value[0], str) else "int"
            return "[]" + kind + "{" + inner + "}"
        if lang == "rs":
            return "vec![" + inner + "]"
        return "[" + inner + "]"
    if isinstance(value, str):
        if lang == "js":
            return "'" + value.replace("'", "\\'") + "'"
        return json.dumps(value)
    return repr(value)


def call(task: Task, args: tuple, lang: str) -> str:
    fn = {"py": task.name, "rs": task.name, "js": js_name(task), "go": go_name(task)}[lang]
    return f"{fn}({', '.join(lit(a, lang) for a in args)})"


def langs(task: Task) -> list[str]:
    out = ["py", "js"]
    if task.go:
        out.append("go")
    if task.rs:
        out.append("rs")
    return out
