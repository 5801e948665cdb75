"""Write the formats protocol: the same facts in thirteen formats, and its questions.

    python -m benchmarks.make_formats_protocol [--set main|holdout] [--out DIR] [--cjk-font FILE]

The formats: .md .docx .xlsx .pptx .pdf .html .rst .odt .epub .eml, a .zip export and two rendered
scans, read by OCR: ``png`` and ``scan-pdf``.
Two guides — an English facilities guide and a Chinese one (行政服务指南) — are defined once below
(`GUIDES`: sections of paragraphs and tables) and written in every format, each format the way
people make such files: Word headings, lists and tables; one spreadsheet sheet per table (a title
row above one table's header, a merged cell in another); one slide per section with its table;
a PDF with a running header, "Page N of M" footers, ruled tables and a word hyphenated at a line
end; an HTML page saved from a site, with a navigation bar, a cookie banner, a footer, scripts,
styles and comments around the content; reStructuredText with ``list-table`` tables; OpenDocument
text written from it by docutils' ODF writer; an EPUB 3 book with a chapter per section; a mail whose
subject is the title, with an HTML body and a plain-text twin; a Notion-style export zip holding the
page as Markdown; and the scans, rendered with `benchmarks.bench_ocr.render_pages` (DejaVu Sans,
WenQuanYi Zen Hei; tables ruled, one row a line) at 150 dpi and A4 width: the whole guide as one tall
grayscale ``.png`` (a screenshot, a notice), and a ``.pdf`` of black-and-white A4 page images with no
text layer (``scan-pdf/``, as an office scanner writes it). ``cases.jsonl`` holds the questions
(`CASES`: English and Chinese, table cells and text), each with the strings a right answer holds and
the other rows' values it must not quote; ``tabular`` cases are asked of the spreadsheet too (it holds
only the tables).

``--set holdout`` writes a second pair of guides (an IT service guide and 员工福利指南, `HOLDOUT_GUIDES`,
`HOLDOUT_CASES`) into ``eval/cases/formats-holdout/``: written before the answer rules were changed for
the main protocol's misses and not looked at while they were, it is measured once at the end
(``haygraph eval-agent --protocol formats --dataset eval/cases/formats-holdout``).

`haygraph eval-agent --protocol formats [--formats png,scan-pdf]` asks every question of every format
(one store per format) and prints the per-format table; ``tests/eval/test_formats_protocol.py`` checks
the files convert to those facts and that this script still writes what is committed. The PDF needs a
TrueType font with Chinese glyphs (Debian: ``apt-get install fonts-wqy-microhei``; ``--cjk-font`` names
another); the scans need ``fonts-dejavu-core`` and ``fonts-wqy-zenhei``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "eval" / "cases" / "formats"
HOLDOUT_OUT = DEFAULT_OUT.with_name("formats-holdout")
DEFAULT_CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
FIXED_TIME = datetime.datetime(2026, 1, 5, 9, 0, 0)
"""Written into every file's metadata, so the script writes the same files each time."""


@dataclass(frozen=True)
class Table:
    """A table: its header and rows; `sheet` names its spreadsheet sheet, `title` a line above it there."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    sheet: str
    title: str = ""
    merge_column: int | None = None
    """In the spreadsheet, cells of this column that repeat the value above are merged into it."""


@dataclass(frozen=True)
class Section:
    """A section: a heading, paragraphs, optional list items, an optional table and text after it."""

    heading: str
    paragraphs: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    table: Table | None = None
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Guide:
    """One document, written once per format as `name` + extension."""

    name: str
    lang: str
    title: str
    intro: str
    running_header: str
    sections: tuple[Section, ...]


@dataclass(frozen=True)
class Case:
    """A question, the strings a right answer holds, and strings (other rows) it must not hold."""

    id: str
    guide: str
    question: str
    answers: tuple[str, ...]
    tabular: bool = False
    excludes: tuple[str, ...] = field(default_factory=tuple)


EN = Guide(
    name="facilities-guide",
    lang="en",
    title="Facilities guide: Ningbo office",
    intro="This guide covers parking, meeting rooms, the shuttle bus, the canteen and building access "
    "at the Ningbo office of Northwind Harbor.",
    running_header="Northwind Harbor - Facilities guide",
    sections=(
        Section(
            "Parking",
            (
                "Staff park in the garage under Harbor Tower. Monthly permits are sold by the Facilities "
                "desk "
                "on floor 12; a permit is valid for one level only.",
            ),
            table=Table(
                ("Level", "Monthly fee", "Spaces"),
                (("B1", "120 EUR", "80"), ("B2", "90 EUR", "150"), ("Roof", "60 EUR", "40")),
                sheet="Parking",
            ),
            after=("Electric cars charge free of charge at the twelve chargers on level B1.",),
        ),
        Section(
            "Meeting rooms",
            (
                "Book meeting rooms in the Room Planner at least one hour in advance. Unused bookings are "
                "released after 15 minutes.",
            ),
            table=Table(
                ("Room", "Seats", "Floor", "Video"),
                (
                    ("Atlas", "12", "3", "Yes"),
                    ("Borealis", "6", "2", "No"),
                    ("Draco", "4", "2", "No"),
                    ("Cygnus", "20", "5", "Yes"),
                ),
                sheet="Meeting rooms",
                merge_column=2,
            ),
        ),
        Section(
            "Shuttle bus",
            ("A free shuttle bus links the office with the nearest stations on working days.",),
            table=Table(
                ("Stop", "First bus", "Last bus", "Every"),
                (
                    ("Harbour station", "06:40", "22:10", "15 min"),
                    ("Tech park", "07:05", "21:30", "20 min"),
                    ("Airport", "05:50", "23:00", "30 min"),
                ),
                sheet="Shuttle bus",
                title="Shuttle bus times (working days)",
            ),
        ),
        Section(
            "Canteen",
            (
                "The canteen on floor 2 serves lunch from 11:30 to 14:00 on working days.",
                "A lunch menu costs 7.50 EUR with the staff card.",
            ),
            items=("A vegetarian dish is on the menu every day.", "Tap water and tea are free."),
        ),
        Section(
            "Badges and access",
            (
                "The building is open from 07:00 to 21:00 on working days; outside these hours you need an "
                "after-hours pass.",
                "A lost badge must be reported to reception the same day. A replacement badge costs 15 EUR.",
            ),
        ),
    ),
)

ZH = Guide(
    name="行政服务指南",
    lang="zh",
    title="行政服务指南（宁波办公室）",
    intro="本指南介绍宁波办公室的班车、会议室、停车、快递收发、门禁卡和健身房等行政服务。",
    running_header="北风港公司 行政服务指南",
    sections=(
        Section(
            "班车时刻表",
            ("公司在工作日为员工提供免费班车，连接办公室与附近车站。",),
            table=Table(
                ("站点", "首班车", "末班车", "发车间隔"),
                (
                    ("东门地铁站", "07:10", "21:40", "15 分钟"),
                    ("科技园站", "07:30", "20:50", "20 分钟"),
                    ("高铁站", "06:50", "22:30", "30 分钟"),
                ),
                sheet="班车时刻表",
                title="班车时刻表（工作日）",
            ),
        ),
        Section(
            "会议室",
            ("会议室须在会议系统中预订，未使用的预订在 15 分钟后自动释放。",),
            table=Table(
                ("会议室", "座位数", "楼层", "视频会议"),
                (("青松厅", "8", "3", "有"), ("翠竹厅", "16", "5", "有"), ("白梅厅", "4", "2", "无")),
                sheet="会议室",
            ),
        ),
        Section("停车", ("地下停车场月租车位须提前 5 个工作日在 OA 系统提交申请，按月收费。",)),
        Section(
            "快递收发",
            ("前台每天 16:00 统一寄出快递。", "到件快递存放在一楼快递柜，保存 3 天，逾期退回前台。"),
        ),
        Section("门禁卡", ("门禁卡遗失须当天告知前台，补办门禁卡收取工本费 20 元。",)),
        Section(
            "健身房",
            ("健身房位于 4 楼，开放时间为 06:30 至 22:00。",),
            items=("首次使用前须签署安全告知书。", "请自带毛巾，离开时关闭空调。"),
        ),
    ),
)

GUIDES = (EN, ZH)

CASES = (
    Case(
        "en-t1",
        EN.name,
        "How much is parking on level B2 per month?",
        ("90 EUR",),
        True,
        ("120 EUR", "60 EUR"),
    ),
    Case(
        "en-t2",
        EN.name,
        "How many parking spaces are there on the roof?",
        ("Spaces: 40",),
        True,
        ("150", "80"),
    ),
    Case(
        "en-t3",
        EN.name,
        "How many seats does the Borealis room have?",
        ("Seats: 6",),
        True,
        ("Atlas", "Cygnus", "Draco"),
    ),
    Case(
        "en-t4",
        EN.name,
        "On which floor is the Cygnus meeting room?",
        ("Floor: 5",),
        True,
        ("Atlas", "Borealis", "Draco"),
    ),
    Case(
        "en-t5",
        EN.name,
        "When does the first shuttle bus leave from Harbour station?",
        ("06:40",),
        True,
        ("07:05", "05:50"),
    ),
    Case(
        "en-t6",
        EN.name,
        "When does the last shuttle bus leave from the airport?",
        ("23:00",),
        True,
        ("22:10", "21:30"),
    ),
    Case("en-x1", EN.name, "When does the canteen serve lunch?", ("11:30", "14:00")),
    Case("en-x2", EN.name, "How much does a replacement badge cost?", ("15 EUR",)),
    Case("en-x3", EN.name, "How many chargers for electric cars are there?", ("twelve",)),
    Case("en-x4", EN.name, "When are unused meeting room bookings released?", ("15 minutes",)),
    Case("en-x5", EN.name, "What time does the building open on working days?", ("07:00",)),
    Case("en-x6", EN.name, "How much does a lunch menu cost?", ("7.50 EUR",)),
    Case("zh-t1", ZH.name, "东门地铁站的首班车几点发车？", ("07:10",), True, ("07:30", "06:50")),
    Case("zh-t2", ZH.name, "高铁站的末班车是几点？", ("22:30",), True, ("21:40", "20:50")),
    Case("zh-t3", ZH.name, "科技园站的班车多久一班？", ("20 分钟",), True, ("东门地铁站", "高铁站")),
    Case("zh-t4", ZH.name, "青松厅有多少个座位？", ("座位数: 8",), True, ("翠竹厅", "白梅厅")),
    Case("zh-t5", ZH.name, "翠竹厅在几楼？", ("楼层: 5",), True, ("青松厅", "白梅厅")),
    Case("zh-t6", ZH.name, "白梅厅有视频会议设备吗？", ("视频会议: 无",), True, ("青松厅", "翠竹厅")),
    Case("zh-x1", ZH.name, "快递每天几点寄出？", ("16:00",)),
    Case("zh-x2", ZH.name, "到件快递在快递柜保存几天？", ("3 天",)),
    Case("zh-x3", ZH.name, "补办门禁卡要多少钱？", ("20 元",)),
    Case("zh-x4", ZH.name, "健身房几点开门？", ("06:30",)),
    Case("zh-x5", ZH.name, "健身房在几楼？", ("4 楼",)),
    Case("zh-x6", ZH.name, "月租车位要提前多久申请？", ("5 个工作日",)),
)


# The hold-out set: other guides and questions in the same formats, written before the answer rules
# were changed for the protocol above and measured once at the end (`--set holdout`).
HOLDOUT_EN = Guide(
    name="it-service-guide",
    lang="en",
    title="IT service guide: Lisbon office",
    intro="This guide covers laptops, the service desk, printing, Wi-Fi and software requests at the "
    "Lisbon office of Northwind Harbor.",
    running_header="Northwind Harbor - IT service guide",
    sections=(
        Section(
            "Laptops",
            ("Every employee receives a laptop on the first day. Laptops are replaced every four years.",),
            table=Table(
                ("Model", "Memory", "Battery life", "Weight"),
                (
                    ("Falcon 14", "16 GB", "11 hours", "1.3 kg"),
                    ("Heron 16", "32 GB", "8 hours", "1.9 kg"),
                    ("Kestrel 13", "8 GB", "14 hours", "1.1 kg"),
                ),
                sheet="Laptops",
                title="Standard laptop models",
            ),
        ),
        Section(
            "Service desk",
            ("Report faults through the service portal; urgent faults may also be phoned in.",),
            table=Table(
                ("Channel", "Opening hours", "First response"),
                (
                    ("Portal", "24 hours", "4 hours"),
                    ("Phone", "08:00-18:00", "15 minutes"),
                    ("Walk-in desk", "09:00-17:00", "30 minutes"),
                ),
                sheet="Service desk",
            ),
            after=("The walk-in desk is on floor 6, next to the lifts.",),
        ),
        Section(
            "Printing",
            (
                "Printers are on every floor. A colour page costs 0.20 EUR and is charged to the "
                "team's cost centre.",
                "Print jobs are deleted if they are not collected within 24 hours.",
            ),
        ),
        Section(
            "Wi-Fi",
            ("Guests use the network NWH-Guest; a guest code is valid for 3 days.",),
            items=(
                "Staff devices join NWH-Staff with their login.",
                "Video streaming is blocked on NWH-Guest.",
            ),
        ),
        Section(
            "Software requests",
            (
                "Request software in the service portal. "
                "Approved requests are installed within two working days.",
            ),
            table=Table(
                ("Software", "Licence cost per year", "Approval by"),
                (
                    ("Design Suite", "600 EUR", "Head of department"),
                    ("Statistics Pro", "350 EUR", "Team lead"),
                    ("PDF Editor", "90 EUR", "Team lead"),
                ),
                sheet="Software",
                merge_column=2,
            ),
        ),
    ),
)

HOLDOUT_ZH = Guide(
    name="员工福利指南",
    lang="zh",
    title="员工福利指南（杭州办公室）",
    intro="本指南介绍杭州办公室的年假、体检、餐补、通勤补贴和员工活动等福利。",
    running_header="北风港公司 员工福利指南",
    sections=(
        Section(
            "年假",
            ("年假按自然年计算，当年未休完的年假可顺延至次年 3 月 31 日。",),
            table=Table(
                ("工龄", "年假天数", "可预支天数"),
                (
                    ("不满 1 年", "5 天", "0 天"),
                    ("1 至 5 年", "10 天", "2 天"),
                    ("5 年以上", "15 天", "3 天"),
                ),
                sheet="年假",
                title="年假标准",
            ),
        ),
        Section(
            "体检",
            ("公司每年为员工安排一次免费体检，须在 OA 系统中预约。",),
            table=Table(
                ("套餐", "费用", "检查项目", "适用人员"),
                (
                    ("基础套餐", "600 元", "12 项", "全体员工"),
                    ("全面套餐", "1200 元", "25 项", "40 岁以上员工"),
                    ("家属套餐", "800 元", "15 项", "员工家属"),
                ),
                sheet="体检",
            ),
        ),
        Section(
            "餐补",
            (
                "每个工作日发放餐补 25 元，直接充入员工卡。",
                "员工食堂位于 3 楼，午餐供应时间为 11:30 至 13:30。",
            ),
        ),
        Section(
            "通勤补贴",
            ("每月通勤补贴为 300 元，随工资发放。",),
            items=("加班至 21:00 以后可报销打车费。", "报销须在 30 天内提交发票。"),
        ),
        Section("员工活动", ("每季度组织一次团队活动，人均预算 200 元。", "年会通常在 1 月中旬举行。")),
    ),
)

HOLDOUT_GUIDES = (HOLDOUT_EN, HOLDOUT_ZH)

HOLDOUT_CASES = (
    Case(
        "en-t1",
        HOLDOUT_EN.name,
        "How much memory does the Heron 16 have?",
        ("32 GB",),
        True,
        ("16 GB", "8 GB"),
    ),
    Case(
        "en-t2",
        HOLDOUT_EN.name,
        "What is the battery life of the Kestrel 13?",
        ("14 hours",),
        True,
        ("11 hours", "8 hours"),
    ),
    Case(
        "en-t3",
        HOLDOUT_EN.name,
        "How quickly does the phone channel give a first response?",
        ("15 minutes",),
        True,
        ("4 hours", "30 minutes"),
    ),
    Case(
        "en-t4",
        HOLDOUT_EN.name,
        "What are the opening hours of the walk-in desk?",
        ("09:00-17:00",),
        True,
        ("08:00-18:00", "24 hours"),
    ),
    Case(
        "en-t5",
        HOLDOUT_EN.name,
        "What does a Statistics Pro licence cost per year?",
        ("350 EUR",),
        True,
        ("600 EUR", "90 EUR"),
    ),
    Case(
        "en-t6",
        HOLDOUT_EN.name,
        "Who approves a Design Suite request?",
        ("Head of department",),
        True,
        ("350 EUR", "90 EUR"),
    ),
    Case("en-x1", HOLDOUT_EN.name, "How often are laptops replaced?", ("four years",)),
    Case("en-x2", HOLDOUT_EN.name, "How much does a colour page cost?", ("0.20 EUR",)),
    Case("en-x3", HOLDOUT_EN.name, "How long is a guest Wi-Fi code valid?", ("3 days",)),
    Case("en-x4", HOLDOUT_EN.name, "On which floor is the walk-in desk?", ("floor 6",)),
    Case("en-x5", HOLDOUT_EN.name, "When are uncollected print jobs deleted?", ("24 hours",)),
    Case(
        "en-x6", HOLDOUT_EN.name, "How long does it take to install approved software?", ("two working days",)
    ),
    Case("zh-t1", HOLDOUT_ZH.name, "工龄 1 至 5 年的员工有几天年假？", ("10 天",), True, ("5 天", "15 天")),
    Case("zh-t2", HOLDOUT_ZH.name, "工龄 5 年以上可以预支几天年假？", ("3 天",), True, ("0 天", "2 天")),
    Case("zh-t3", HOLDOUT_ZH.name, "全面套餐的费用是多少？", ("1200 元",), True, ("600 元", "800 元")),
    Case("zh-t4", HOLDOUT_ZH.name, "基础套餐包括多少项检查？", ("12 项",), True, ("25 项", "15 项")),
    Case(
        "zh-t5", HOLDOUT_ZH.name, "家属套餐适用于哪些人？", ("员工家属",), True, ("全体员工", "40 岁以上员工")
    ),
    Case(
        "zh-t6", HOLDOUT_ZH.name, "全面套餐适合什么人员？", ("40 岁以上员工",), True, ("全体员工", "员工家属")
    ),
    Case("zh-x1", HOLDOUT_ZH.name, "每天的餐补是多少钱？", ("25 元",)),
    Case("zh-x2", HOLDOUT_ZH.name, "员工食堂在几楼？", ("3 楼",)),
    Case("zh-x3", HOLDOUT_ZH.name, "每月通勤补贴多少？", ("300 元",)),
    Case("zh-x4", HOLDOUT_ZH.name, "未休完的年假可以顺延到什么时候？", ("3 月 31 日",)),
    Case("zh-x5", HOLDOUT_ZH.name, "团队活动的人均预算是多少？", ("200 元",)),
    Case("zh-x6", HOLDOUT_ZH.name, "报销打车费须在多少天内提交发票？", ("30 天",)),
)

SETS = {"main": (GUIDES, CASES), "holdout": (HOLDOUT_GUIDES, HOLDOUT_CASES)}
"""`--set`: the protocol (``eval/cases/formats/``) or its hold-out (``eval/cases/formats-holdout/``)."""

FORMATS = ("md", "docx", "xlsx", "pptx", "pdf", "html", "rst", "odt", "epub", "eml", "zip", "png", "scan-pdf")
EXTENSIONS = {"scan-pdf": "pdf"}
"""A format's file extension where it is not the format's name."""

_ZIP_TIME = (2026, 1, 5, 9, 0, 0)


def markdown_text(guide: Guide) -> str:
    """The guide as Markdown text (what `write_markdown` writes)."""
    path_text: list[str] = []
    _markdown_blocks(guide, path_text)
    return "\n\n".join(path_text) + "\n"


def write_markdown(guide: Guide, path: Path) -> None:
    """The guide as Markdown: the reference every other format is compared with."""
    path.write_text(markdown_text(guide), encoding="utf-8")


def _markdown_blocks(guide: Guide, blocks: list[str]) -> None:
    """The Markdown blocks of the guide, appended to `blocks`."""
    blocks.extend([f"# {guide.title}", guide.intro])
    for section in guide.sections:
        blocks.append(f"## {section.heading}")
        blocks.extend(section.paragraphs)
        if section.items:
            blocks.append("\n".join(f"- {item}" for item in section.items))
        if section.table is not None:
            table = section.table
            lines = ["| " + " | ".join(table.header) + " |", "|" + "---|" * len(table.header)]
            lines += ["| " + " | ".join(row) + " |" for row in table.rows]
            blocks.append("\n".join(lines))
        blocks.extend(section.after)


def write_docx(guide: Guide, path: Path) -> None:
    """The guide as Word: Title and Heading 1 styles, List Bullet items, a table per table."""
    import docx

    document = docx.Document()
    document.core_properties.created = FIXED_TIME
    document.core_properties.modified = FIXED_TIME
    document.core_properties.last_modified_by = "haygraph"
    document.core_properties.author = "haygraph"
    document.add_heading(guide.title, level=0)
    document.add_paragraph(guide.intro)
    for section in guide.sections:
        document.add_heading(section.heading, level=1)
        for text in section.paragraphs:
            document.add_paragraph(text)
        for item in section.items:
            document.add_paragraph(item, style="List Bullet")
        if section.table is not None:
            rows = [section.table.header, *section.table.rows]
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = "Table Grid"
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    table.cell(r, c).text = value
        for text in section.after:
            document.add_paragraph(text)
    document.save(str(path))


def write_xlsx(guides: tuple[Guide, ...], path: Path) -> None:
    """Every table of the guides as a sheet (the workbook holds no running text)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    book.properties.created = FIXED_TIME
    book.properties.modified = FIXED_TIME
    book.properties.creator = "haygraph"
    for guide in guides:
        for section in guide.sections:
            table = section.table
            if table is None:
                continue
            sheet = book.create_sheet(table.sheet)
            if table.title:
                sheet.append([table.title])
                sheet.append([])
            sheet.append(list(table.header))
            first = sheet.max_row + 1
            for row in table.rows:
                sheet.append([int(v) if v.isdigit() else v for v in row])
            if table.merge_column is not None:
                _merge_repeats(sheet, first, table, table.merge_column + 1)
    book.save(str(path))


def _merge_repeats(sheet: object, first: int, table: Table, column: int) -> None:
    """Merge runs of one value down `column` (1-based) into their first cell, as people lay out sheets."""
    values = [row[column - 1] for row in table.rows]
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            if i - start > 1:
                sheet.merge_cells(  # type: ignore[attr-defined]
                    start_row=first + start, start_column=column, end_row=first + i - 1, end_column=column
                )
            start = i


def write_pptx(guide: Guide, path: Path) -> None:
    """One title slide, then one slide per section: its heading as the title, text, bullets, table."""
    import pptx
    from pptx.util import Inches, Pt

    deck = pptx.Presentation()
    deck.core_properties.created = FIXED_TIME
    deck.core_properties.modified = FIXED_TIME
    deck.core_properties.last_modified_by = "haygraph"
    deck.core_properties.revision = 1
    title = deck.slides.add_slide(deck.slide_layouts[0])
    title.shapes.title.text = guide.title
    title.placeholders[1].text = guide.intro
    for section in guide.sections:
        slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
        slide.shapes.title.text = section.heading
        top = 1.5
        texts = [*section.paragraphs, *section.after]
        if texts:
            frame = slide.shapes.add_textbox(Inches(0.5), Inches(top), Inches(9), Inches(1.2)).text_frame
            frame.word_wrap = True
            for i, text in enumerate(texts):
                paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
                paragraph.text = text
                paragraph.font.size = Pt(14)
            top += 1.3
        if section.items:
            frame = slide.shapes.add_textbox(Inches(0.5), Inches(top), Inches(9), Inches(0.8)).text_frame
            for i, item in enumerate(section.items):
                paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
                paragraph.text = f"• {item}"
                paragraph.font.size = Pt(14)
            top += 0.9
        if section.table is not None:
            rows = [section.table.header, *section.table.rows]
            shape = slide.shapes.add_table(
                len(rows), len(rows[0]), Inches(0.5), Inches(top), Inches(9), Inches(0.4 * len(rows))
            )
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
    deck.save(str(path))


def write_pdf(guide: Guide, path: Path, cjk_font: Path) -> None:
    """A4 pages: a running header and "Page N of M" footer, a section per page, ruled tables.

    One English paragraph is set line by line with a word hyphenated at the line end ("per-" /
    "mit"), as typeset PDFs are.
    """
    from fpdf import FPDF

    class Document(FPDF):
        def header(self) -> None:
            self.set_font("body", size=9)
            self.cell(0, 8, guide.running_header, align="R")
            self.ln(12)

        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("body", size=9)
            self.cell(0, 8, f"Page {self.page_no()} of {{nb}}", align="C")

    pdf = Document(format="A4")
    pdf.set_creation_date(FIXED_TIME)
    pdf.set_creator("haygraph")
    pdf.set_producer("haygraph")
    pdf.add_font("body", fname=str(cjk_font), collection_font_number=0)
    pdf.add_font("body", style="B", fname=str(cjk_font), collection_font_number=0)  # table headings
    pdf.set_auto_page_break(True, margin=20)
    pdf.add_page()
    pdf.set_font("body", size=18)
    pdf.multi_cell(0, 10, guide.title, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("body", size=11)
    pdf.multi_cell(0, 6, guide.intro, new_x="LMARGIN", new_y="NEXT")
    for index, section in enumerate(guide.sections):
        if index:
            pdf.add_page()
        else:
            pdf.ln(6)
        pdf.set_font("body", size=14)
        pdf.multi_cell(0, 8, section.heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        pdf.set_font("body", size=11)
        for text in section.paragraphs:
            if text.startswith("Staff park in the garage"):
                for line in _hyphenated_lines(text):
                    pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
            else:
                pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
        for item in section.items:
            pdf.multi_cell(0, 6, f"• {item}", new_x="LMARGIN", new_y="NEXT")
        if section.items:
            pdf.ln(3)
        if section.table is not None:
            with pdf.table(first_row_as_headings=True, line_height=7) as table:
                for row in (section.table.header, *section.table.rows):
                    cells = table.row()
                    for value in row:
                        cells.cell(value)
            pdf.ln(3)
        for text in section.after:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(str(path))


def _hyphenated_lines(text: str) -> list[str]:
    """The parking paragraph broken into lines, "permit" hyphenated across the second line break."""
    first, rest = text.split(" Monthly ", 1)
    before, after = rest.split(" permit ", 1)
    return [first, f"Monthly {before} per-", f"mit {after}"]


def scan_blocks(guide: Guide) -> list[tuple[str, object]]:
    """The guide as `benchmarks.bench_ocr.render_pages` blocks: title, introduction, then each section."""
    blocks: list[tuple[str, object]] = [("title", guide.title), ("text", guide.intro)]
    for section in guide.sections:
        blocks.append(("heading", section.heading))
        blocks += [("text", text) for text in section.paragraphs]
        blocks += [("text", f"• {item}") for item in section.items]
        if section.table is not None:
            blocks.append(("table", [section.table.header, *section.table.rows]))
        blocks += [("text", text) for text in section.after]
    return blocks


def _scan_pages(guide: Guide, page_height: int | None = None) -> list[Any]:
    """The guide rendered as `benchmarks.bench_ocr` renders its pages (DejaVu Sans, WenQuanYi Zen Hei)."""
    from benchmarks.bench_ocr import CJK_FONT, LATIN_FONT, PAGE_HEIGHT, render_pages

    font = CJK_FONT if guide.lang == "zh" else LATIN_FONT
    for needed in (font, CJK_FONT):  # tables are set in the CJK font in both languages
        if not Path(needed).is_file():
            raise SystemExit(f"the scans need {needed} (apt-get install fonts-dejavu-core fonts-wqy-zenhei)")
    return render_pages(scan_blocks(guide), font, page_height=page_height or PAGE_HEIGHT)


def write_png(guide: Guide, path: Path) -> None:
    """The whole guide as one tall grayscale image, 150 dpi at A4 width, as a screenshot or a notice."""
    from PIL import ImageOps

    (page,) = _scan_pages(guide, page_height=20_000)
    bottom = ImageOps.invert(page).getbbox()[3]  # type: ignore[index]
    page.crop((0, 0, page.width, bottom + 90)).save(path, optimize=True)


def write_scan_pdf(guide: Guide, path: Path) -> None:
    """The guide as a scanned PDF: A4 pages at 150 dpi in black and white, no text layer.

    The pages are stored as CCITT G4 bitmaps (Pillow's PDF writer), as office scanners store them.
    """
    first, *rest = (page.point(lambda v: 255 if v > 160 else 0, mode="1") for page in _scan_pages(guide))
    first.save(
        path,
        save_all=True,
        append_images=rest,
        resolution=150,
        creationDate=FIXED_TIME.timetuple(),
        modDate=FIXED_TIME.timetuple(),
        creator="haygraph",
        producer="haygraph",
    )


def write_html(guide: Guide, path: Path) -> None:
    """The guide as a page saved from an intranet site: navigation, banner, footer and scripts around it."""
    from html import escape

    nav = "".join(f'<li><a href="#s{i}">{escape(s.heading)}</a></li>' for i, s in enumerate(guide.sections))
    body = [f"<h1>{escape(guide.title)}</h1>", f"<p>{escape(guide.intro)}</p>"]
    for i, section in enumerate(guide.sections):
        body.extend(_section_html(section, i))
    page = f"""<!DOCTYPE html>
<html lang="{guide.lang}">
<head>
<meta charset="utf-8">
<title>{escape(guide.title)} | Intranet</title>
<style>body {{ font-family: sans-serif; }} .cookie-banner {{ position: fixed; }}</style>
<script>window.dataLayer = window.dataLayer || []; function gtag() {{ dataLayer.push(arguments); }}</script>
</head>
<body>
<div class="cookie-banner" id="cookie-consent"><p>We use cookies to improve your experience on the
intranet portal. By continuing to browse you accept our cookie policy.</p>
<button>Accept all cookies</button></div>
<header class="site-header"><a class="logo" href="/">Intranet portal home</a>
<nav><ul><li><a href="/news">Company news</a></li><li><a href="/people">People directory</a></li>
<li><a href="/it">IT helpdesk portal</a></li></ul></nav></header>
<div class="layout">
<aside class="sidebar"><p>On this page</p><ul>{nav}</ul></aside>
<main>
{chr(10).join(body)}
<!-- editor's note: check the canteen prices with catering before publishing -->
<template><p>Template placeholder text that is never shown</p></template>
<noscript><p>Enable JavaScript to see the interactive floor map</p></noscript>
</main>
</div>
<footer class="site-footer"><p>Copyright Northwind Harbor intranet team. Last published by the web
office.</p><p><a href="/privacy">Privacy statement</a> <a href="/contact">Contact the web office</a></p>
</footer>
<script>document.querySelectorAll("table").forEach(function (t) {{ t.classList.add("striped"); }});</script>
</body>
</html>
"""
    path.write_text(page, encoding="utf-8")


def _section_html(section: Section, i: int) -> list[str]:
    """One section as HTML blocks: its heading, paragraphs, list, table and the text after it."""
    from html import escape

    body = [f'<h2 id="s{i}">{escape(section.heading)}</h2>']
    body.extend(f"<p>{escape(text)}</p>" for text in section.paragraphs)
    if section.items:
        body.append("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in section.items) + "</ul>")
    if section.table is not None:
        head = "".join(f"<th>{escape(h)}</th>" for h in section.table.header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in section.table.rows
        )
        body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    body.extend(f"<p>{escape(text)}</p>" for text in section.after)
    return body


def rst_text(guide: Guide) -> str:
    """The guide as reStructuredText: sections underlined, bullet lists, a ``list-table`` per table."""

    def heading(text: str, mark: str) -> list[str]:
        return [text, mark * (2 * len(text)), ""]  # wide (CJK) characters take two columns

    lines = [*heading(guide.title, "="), guide.intro, ""]
    for section in guide.sections:
        lines += heading(section.heading, "-")
        for text in section.paragraphs:
            lines += [text, ""]
        if section.items:
            lines += [f"- {item}" for item in section.items] + [""]
        if section.table is not None:
            lines += [".. list-table::", "   :header-rows: 1", ""]
            for row in (section.table.header, *section.table.rows):
                lines += [f"   * - {row[0]}"] + [f"     - {value}" for value in row[1:]]
            lines.append("")
        for text in section.after:
            lines += [text, ""]
    return "\n".join(lines)


def write_rst(guide: Guide, path: Path) -> None:
    """The guide as reStructuredText (`rst_text`)."""
    path.write_text(rst_text(guide), encoding="utf-8")


def write_odt(guide: Guide, path: Path) -> None:
    """The guide as OpenDocument text, written by docutils' ODF writer from `rst_text`."""
    from docutils.core import publish_string  # type: ignore[import-untyped,unused-ignore]

    data = publish_string(
        source=rst_text(guide), writer="odf_odt", settings_overrides={"_disable_config": True}
    )
    path.write_bytes(data)


def _zip_write(archive: zipfile.ZipFile, name: str, data: str | bytes, stored: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def write_epub(guide: Guide, path: Path) -> None:
    """The guide as an EPUB 3 book: the title and introduction, then one XHTML chapter per section."""
    from html import escape

    def xhtml(body: list[str]) -> str:
        return (
            f'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml" '
            f'xml:lang="{guide.lang}"><head><title>{escape(guide.title)}</title></head><body>'
            + "\n".join(body)
            + "</body></html>"
        )

    chapters = [xhtml([f"<h1>{escape(guide.title)}</h1>", f"<p>{escape(guide.intro)}</p>"])]
    chapters += [xhtml(_section_html(section, i)) for i, section in enumerate(guide.sections)]
    manifest = "".join(
        f'<item id="c{i}" href="text/c{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in range(len(chapters))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    package = (
        '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
        f'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:identifier id="id">haygraph-{guide.name}</dc:identifier>'
        f"<dc:title>{escape(guide.title)}</dc:title>"
        f"<dc:language>{guide.lang}</dc:language></metadata><manifest>{manifest}</manifest>"
        f"<spine>{spine}</spine></package>"
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    with zipfile.ZipFile(path, "w") as book:
        _zip_write(book, "mimetype", "application/epub+zip", stored=True)
        _zip_write(book, "META-INF/container.xml", container)
        _zip_write(book, "OEBPS/content.opf", package)
        for i, chapter in enumerate(chapters):
            _zip_write(book, f"OEBPS/text/c{i}.xhtml", chapter)


def write_eml(guide: Guide, path: Path) -> None:
    """The guide as a mail: the title as its subject, the text as an HTML body with a plain-text twin."""
    from email.message import EmailMessage
    from email.utils import format_datetime
    from html import escape

    mail = EmailMessage()
    mail["Subject"] = guide.title
    mail["From"] = "Office services <office@example.com>"
    mail["To"] = "all-staff@example.com"
    mail["Date"] = format_datetime(FIXED_TIME.replace(tzinfo=datetime.UTC))
    mail.set_content(markdown_text(guide).split("\n\n", 1)[1])  # the plain twin: the text below the title
    body = [f"<p>{escape(guide.intro)}</p>"]
    for i, section in enumerate(guide.sections):
        body += _section_html(section, i)
    mail.add_alternative("<html><body>" + "\n".join(body) + "</body></html>", subtype="html")
    path.write_bytes(bytes(mail))


def write_zip(guide: Guide, path: Path) -> None:
    """The guide as a Notion-style export: a zip holding the page as Markdown."""
    with zipfile.ZipFile(path, "w") as archive:
        _zip_write(archive, f"{guide.name}.md", markdown_text(guide))


def write_cases(path: Path, cases: tuple[Case, ...] = CASES) -> None:
    """``cases.jsonl``: one line per question (the fields `haygraph.eval.formats_protocol` reads)."""
    lines = [
        json.dumps(
            {
                "id": case.id,
                "lang": case.id[:2],
                "guide": case.guide,
                "question": case.question,
                "answer_contains": list(case.answers),
                "answer_excludes": list(case.excludes),
                "tabular": case.tabular,
            },
            ensure_ascii=False,
        )
        for case in cases
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_all(
    out: Path, cjk_font: Path | None, formats: tuple[str, ...] = FORMATS, which: str = "main"
) -> None:
    """Write `formats` of set `which`'s guides into ``out/<format>/``, its questions into ``cases.jsonl``."""
    guides, cases = SETS[which]
    for fmt in formats:
        folder = out / fmt
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        if fmt == "xlsx":
            write_xlsx(guides, folder / "tables.xlsx")
            continue
        for guide in guides:
            target = folder / f"{guide.name}.{EXTENSIONS.get(fmt, fmt)}"
            if fmt == "md":
                write_markdown(guide, target)
            elif fmt == "docx":
                write_docx(guide, target)
            elif fmt == "pptx":
                write_pptx(guide, target)
            elif fmt == "html":
                write_html(guide, target)
            elif fmt in WRITERS:
                WRITERS[fmt](guide, target)
            elif fmt == "pdf":
                if cjk_font is None or not cjk_font.is_file():
                    raise SystemExit(
                        f"the PDF needs a font with Chinese glyphs: {cjk_font} not found "
                        "(apt-get install fonts-wqy-microhei, or give --cjk-font FILE)"
                    )
                write_pdf(guide, target, cjk_font)
    write_cases(out / "cases.jsonl", cases)


WRITERS = {
    "rst": write_rst,
    "odt": write_odt,
    "epub": write_epub,
    "eml": write_eml,
    "zip": write_zip,
    "png": write_png,
    "scan-pdf": write_scan_pdf,
}


def main(argv: list[str] | None = None) -> int:
    """Write the protocol's files (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--set",
        choices=sorted(SETS),
        default="main",
        help="the protocol (main) or its hold-out set, measured once at the end of a change (holdout)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"folder to write (default: {DEFAULT_OUT}, or {HOLDOUT_OUT} for --set holdout)",
    )
    parser.add_argument(
        "--cjk-font", type=Path, default=DEFAULT_CJK_FONT, help="TrueType font with Chinese glyphs"
    )
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated formats to write")
    args = parser.parse_args(argv)
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        parser.error(f"unknown format(s) {unknown}; valid: {', '.join(FORMATS)}")
    out = args.out or (HOLDOUT_OUT if args.set == "holdout" else DEFAULT_OUT)
    write_all(out, args.cjk_font, formats, args.set)
    print(f"wrote {', '.join(formats)} and cases.jsonl ({len(SETS[args.set][1])} questions) into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
