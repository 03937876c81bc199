"""Identifier extraction for every §4.13 strict class (and what is not an identifier), in prose and in
tool output, with its speed guard rails (no quadratic scan)."""

from __future__ import annotations

import time

import pytest

from openclaw_cli.compaction.identifiers import IdentifierScanner, extract_identifiers, scan_identifiers

# (value, kind): one of each class, as it appears in a sentence
CLASSES = [
    ("https://tickets.example.test/OPS-1?tab=log", "url"),
    ("s3://bucket-7/exports/", "url"),
    ("/srv/billing/exporter.py", "path"),
    ("~/proj/src", "path"),
    ("src/pkg/module.py", "path"),
    ("src\\app\\main.py", "path"),
    ("C:\\Users\\ops\\notes.txt", "winpath"),
    ("README.md", "file"),
    ("config.yaml", "file"),
    ("db-7.internal:5432", "hostport"),
    ("localhost:8080", "hostport"),
    ("[::1]:443", "hostport"),
    ("10.0.0.12", "ip"),
    ("192.168.0.0/16", "ip"),
    ("fe80::1ff:fe23:4567:890a", "ip"),
    ("2001:db8::/32", "ip"),
    ("3f2a9c1e-0b4d-4e8f-9a7b-1c2d3e4f5a6b", "uuid"),
    ("9f86d081884c7d65", "hex"),
    ("call_d7eb89a64d0f", "hex"),
    ("OPS-88412", "id"),
    ("build_2291", "id"),
    ("release-train-2026-03-14", "id"),
    ("gpt-4o", "id"),
    ("2026-03-14", "date"),
    ("2026-03-14T10:30:00Z", "date"),
    ("2026-03-14T10:30:00.250+02:00", "date"),
    ("2026/03/14", "date"),
    ("14/03/2026", "date"),
    ("14.03.2026", "date"),
    ("2026-03", "date"),
    ("10:30", "time"),
    ("10:30:15.250", "time"),
    ("9:05pm", "time"),
    ("v1.2.3", "version"),
    ("2.14.0-rc.1", "version"),
    ("v2.1", "version"),
    ("1234567", "number"),
    ("ops+alerts@example.test", "email"),
    ("api.example.com", "host"),
    ("#4412", "ref"),
]
PROSE_ONLY = [
    ("March 14, 2026", "date"),
    ("14 Mar 2026", "date"),
    ("20 MB", "unit"),
    ("150ms", "unit"),
    ("95%", "unit"),
]


def sentence(values: list[str]) -> str:
    return " ".join(
        f"item {i}: {v}, then" if i % 3 == 0 else f"({v})" if i % 3 == 1 else f"`{v}`."
        for i, v in enumerate(values)
    )


@pytest.mark.parametrize("prose", [True, False])
def test_every_class_is_found_with_its_kind(prose: bool):
    cases = CLASSES + (PROSE_ONLY if prose else [])
    found = {i.value: i.kind for i in scan_identifiers(sentence([v for v, _ in cases]), conversational=prose)}
    assert {v: found.get(v) for v, _ in cases} == dict(cases)
    if not prose:  # tool output: no number+unit or month-name forms
        assert not {v for v, _ in PROSE_ONLY} & set(found)


def test_the_date_bearing_kebab_name_of_the_report():
    text = "Cut the branch release-train-2026-03-14 after the freeze; see OPS-88412."
    assert extract_identifiers(text) == ["release-train-2026-03-14", "OPS-88412"]
    assert extract_identifiers(text, conversational=False) == ["release-train-2026-03-14", "OPS-88412"]


def test_plain_prose_and_numbers_are_not_identifiers():
    prose = (
        "We should use and/or logic here: a / b is fine, 12 apples and 3 pears, e.g. the defaced facade "
        "mentioned in chapter 4. Done. The 21st attempt, step 2 of 5, took 3.5 hours; i.e. fine. "
        "Call self.refresh() then log.info and os.path. 4096 is a power of two."
    )
    assert extract_identifiers(prose, conversational=False) == []
    assert extract_identifiers(prose) == ["3.5 hours"]  # a number with its unit is kept in prose


def test_identifiers_are_stripped_of_punctuation_and_markdown():
    text = "Use **/srv/app/main.py**, (see https://x.test/a). Host 'db.internal:5432'; ids: [OPS-12345]!"
    assert extract_identifiers(text) == [
        "/srv/app/main.py",
        "https://x.test/a",
        "db.internal:5432",
        "OPS-12345",
    ]


def test_cjk_text_glued_to_identifiers():
    text = "修改/srv/app/设置.py。请看https://例子.test/页面，谢谢！文件 /数据/报告.md 和 main.py中的问题 以及 build_2291号"
    assert extract_identifiers(text) == [
        "/srv/app/设置.py",
        "https://例子.test/页面",
        "/数据/报告.md",
        "main.py",
        "build_2291",
    ]


def test_scan_many_is_unique_and_newest_first():
    scanner = IdentifierScanner()
    newest_first = ["now /srv/c.py and /srv/a.py", "before /srv/b.py", "first /srv/a.py"]
    assert list(scanner.scan_many(newest_first)) == ["/srv/c.py", "/srv/a.py", "/srv/b.py"]
    big = ["log line /var/log/x.log\n" * 5000, "other /var/log/y.log\nlog line /var/log/x.log"]
    assert list(scanner.scan_many(big, prose=False)) == ["/var/log/x.log", "/var/log/y.log"]


@pytest.mark.parametrize(
    "text",
    [
        "hello world " * 100_000 + "end",  # a long stretch without any candidate, ending mid-token
        "x" * 400_000,
        "a1 " + "word " * 100_000,
        "1" * 200_000,
        "/" * 200_000,
        "ab/" * 100_000,
        "1.2." * 50_000 + "x",
    ],
)
def test_no_quadratic_scan(text: str):
    start = time.process_time()
    scan_identifiers(text)
    scan_identifiers(text, conversational=False)
    assert time.process_time() - start < 1.0
