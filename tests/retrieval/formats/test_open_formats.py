"""OpenDocument, epub, eml and rst through `MultiFormatConverter`: structure, pages, what is left out.

The ``.odt`` of the first test is written by docutils' ODF writer (a real producer); the others are
packages written here with the elements ODF 1.2 and EPUB 3 define (LibreOffice is not installed here).
"""

from __future__ import annotations

import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.errors import UnreadableFileError

NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"'
)


def odf(path: Path, mimetype: str, body: str, styles: str = "") -> Path:
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {NS}>'
        f"<office:automatic-styles>{styles}</office:automatic-styles><office:body>{body}</office:body>"
        "</office:document-content>"
    )
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        package.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
    return path


def convert(path: Path) -> tuple[str, dict]:
    doc = MultiFormatConverter().run([path])["documents"][0]
    return doc.content or "", doc.meta


def test_odt_written_by_docutils_keeps_title_headings_lists_and_tables(tmp_path: Path) -> None:
    from docutils.core import publish_string

    source = (
        "Facilities guide\n================\n\nThe guide for staff.\n\nMeeting rooms\n-------------\n\n"
        "- Oak room\n- Pine room\n\n+------+-------+\n| Room | Seats |\n+======+=======+\n"
        "| Oak  | 12    |\n+------+-------+\n| Pine | 30    |\n+------+-------+\n"
    )
    data = publish_string(source=source, writer="odf_odt", settings_overrides={"_disable_config": True})
    path = tmp_path / "guide.odt"
    path.write_bytes(data)
    text, meta = convert(path)
    assert text == (
        "# Facilities guide\n\nThe guide for staff.\n\n## Meeting rooms\n\n- Oak room\n- Pine room\n\n"
        "| Room | Seats |\n|---|---|\n| Oak | 12 |\n| Pine | 30 |"
    )
    assert meta["title"] == "Facilities guide"


def test_odt_merged_cells_repeat_and_comments_notes_deletions_are_left_out(tmp_path: Path) -> None:
    body = (
        "<office:text>"
        '<text:h text:outline-level="1">Parking</text:h>'
        "<text:p>Level B2 is free<office:annotation><text:p>reviewer: check this</text:p>"
        "</office:annotation> for staff.</text:p>"
        "<text:tracked-changes><text:changed-region><text:deletion><text:p>old deleted text</text:p>"
        "</text:deletion></text:changed-region></text:tracked-changes>"
        "<text:list><text:list-item><text:p>Cars</text:p><text:list><text:list-item><text:p>Electric</text:p>"
        "</text:list-item></text:list></text:list-item></text:list>"
        "<table:table><table:table-row><table:table-cell><text:p>Level</text:p></table:table-cell>"
        "<table:table-cell><text:p>Fee</text:p></table:table-cell></table:table-row>"
        '<table:table-row><table:table-cell table:number-columns-spanned="2"><text:p>B1 closed</text:p>'
        "</table:table-cell><table:covered-table-cell/></table:table-row>"
        '<table:table-row><table:table-cell table:number-rows-spanned="2"><text:p>B2</text:p>'
        "</table:table-cell>"
        "<table:table-cell><text:p>90 EUR</text:p></table:table-cell></table:table-row>"
        "<table:table-row><table:covered-table-cell/><table:table-cell><text:p>60 EUR</text:p>"
        "</table:table-cell></table:table-row></table:table>"
        "</office:text>"
    )
    text, _ = convert(odf(tmp_path / "parking.odt", "application/vnd.oasis.opendocument.text", body))
    assert text == (
        "# Parking\n\nLevel B2 is free for staff.\n\n- Cars\n  - Electric\n\n"
        "| Level | Fee |\n|---|---|\n| B1 closed | B1 closed |\n| B2 | 90 EUR |\n| B2 | 60 EUR |"
    )


def test_ods_sheets_are_pages_with_their_tables(tmp_path: Path) -> None:
    def row(*cells: str) -> str:
        return (
            "<table:table-row>"
            + "".join(
                f'<table:table-cell office:value-type="string"><text:p>{c}</text:p></table:table-cell>'
                for c in cells
            )
            + '<table:table-cell table:number-columns-repeated="1020"/></table:table-row>'
        )

    body = (
        "<office:spreadsheet>"
        f'<table:table table:name="Rooms">{row("Room", "Seats")}{row("Oak", "12")}{row("Pine", "30")}'
        '<table:table-row table:number-rows-repeated="1048570"><table:table-cell '
        'table:number-columns-repeated="1024"/></table:table-row></table:table>'
        f'<table:table table:name="Fees">{row("Level", "Fee")}{row("B2", "90 EUR")}</table:table>'
        "</office:spreadsheet>"
    )
    text, meta = convert(odf(tmp_path / "data.ods", "application/vnd.oasis.opendocument.spreadsheet", body))
    assert "| Oak | 12 |" in text and "| B2 | 90 EUR |" in text
    assert text.index("Rooms") < text.index("Oak") < text.index("Fees") < text.index("B2")
    assert len(meta["page_starts"]) == 2 and text[meta["page_starts"][1] :].lstrip("# ").startswith("Fees")


def test_odp_slides_are_pages_titles_headings_and_notes_left_out(tmp_path: Path) -> None:
    def slide(title: str, line: str) -> str:
        return (
            f'<draw:page draw:name="{title}"><draw:frame presentation:class="title"><draw:text-box>'
            f"<text:p>{title}</text:p></draw:text-box></draw:frame>"
            f'<draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item>'
            f"<text:p>{line}</text:p></text:list-item></text:list></draw:text-box></draw:frame>"
            f"<presentation:notes><draw:frame><draw:text-box><text:p>speaker notes {title}</text:p>"
            "</draw:text-box></draw:frame></presentation:notes></draw:page>"
        )

    body = f"<office:presentation>{slide('Welcome', 'Badges at reception')}{slide('Rooms', 'Oak seats 12')}"
    body += "</office:presentation>"
    text, meta = convert(odf(tmp_path / "deck.odp", "application/vnd.oasis.opendocument.presentation", body))
    assert text == "## Welcome\n\n- Badges at reception\n\n## Rooms\n\n- Oak seats 12"
    assert meta["page_starts"] == [0, text.index("## Rooms")]


def test_epub_chapters_in_spine_order_as_pages(tmp_path: Path) -> None:
    path = tmp_path / "handbook.epub"
    chapter = '<html xmlns="http://www.w3.org/1999/xhtml"><body><h1>{0}</h1><p>{1}</p></body></html>'
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        book.writestr(
            "OEBPS/content.opf",
            '<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>'
            '<item id="c2" href="text/two.xhtml" media-type="application/xhtml+xml"/>'
            '<item id="c1" href="text/one.xhtml" media-type="application/xhtml+xml"/>'
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
            '<item id="evil" href="../../etc/passwd" media-type="application/xhtml+xml"/>'
            '</manifest><spine><itemref idref="nav" linear="no"/><itemref idref="c1"/><itemref idref="c2"/>'
            '<itemref idref="evil"/></spine></package>',
        )
        book.writestr("OEBPS/text/one.xhtml", chapter.format("Arrival", "Badges are issued at reception."))
        book.writestr("OEBPS/text/two.xhtml", chapter.format("Leave", "Staff get 25 days of leave."))
        book.writestr("OEBPS/nav.xhtml", chapter.format("Contents", "table of contents"))
    text, meta = convert(path)
    assert text == "# Arrival\n\nBadges are issued at reception.\n\n# Leave\n\nStaff get 25 days of leave."
    assert meta["page_starts"] == [0, text.index("# Leave")] and meta["title"] == "Arrival"


def test_eml_headers_body_and_attachments_each_by_type(tmp_path: Path) -> None:
    inner = EmailMessage()
    inner["Subject"] = "Earlier note"
    inner["From"] = "hr@example.com"
    inner.set_content("The earlier note says the canteen opens at 8.")
    mail = EmailMessage()
    mail["Subject"] = "Office move"
    mail["From"] = "Facilities <facilities@example.com>"
    mail["To"] = "staff@example.com"
    mail["Date"] = "Mon, 7 Dec 2026 09:00:00 +0000"
    mail.set_content("We move to building C on Friday.")
    mail.add_alternative("<p>We move to <b>building C</b> on Friday.</p>", subtype="html")
    mail.add_attachment(b"room,seats\nOak,12\n", maintype="text", subtype="csv", filename="rooms.csv")
    mail.add_attachment(b"# Parking\n\nLevel B2.", maintype="text", subtype="markdown", filename="parking.md")
    mail.add_attachment(b"\x89PNG\r\n", maintype="image", subtype="png", filename="map.png")
    mail.add_attachment(inner)
    path = tmp_path / "move.eml"
    path.write_bytes(bytes(mail))
    text, meta = convert(path)
    assert text.startswith(
        "# Office move\n\nFrom: Facilities <facilities@example.com>\nTo: staff@example.com\n"
        "Date: Mon, 07 Dec 2026 09:00:00 +0000\n\nWe move to building C on Friday."
    )
    assert "## Attachment: rooms.csv\n\n| room | seats |\n|---|---|\n| Oak | 12 |" in text
    assert "## Attachment: parking.md\n\n## Parking\n\nLevel B2." in text
    assert "map.png" not in text and "PNG" not in text
    assert "## Attachment: Earlier note\n\n## Earlier note" in text and "canteen opens at 8" in text
    assert meta["title"] == "Office move"


def test_rst_sections_lists_tables_and_no_file_inclusion(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET CONTENT", encoding="utf-8")
    source = (
        f"Guide\n=====\n\nIntro.\n\nRooms\n-----\n\n- Oak\n- Pine\n\n.. include:: {secret}\n\n"
        ".. raw:: html\n\n   <script>alert(1)</script>\n\n"
        "=====  =====\nRoom   Seats\n=====  =====\nOak    12\n=====  =====\n"
    )
    path = tmp_path / "guide.rst"
    path.write_text(source, encoding="utf-8")
    text, meta = convert(path)
    assert (
        text == "# Guide\n\nIntro.\n\n## Rooms\n\n- Oak\n- Pine\n\n| Room | Seats |\n|---|---|\n| Oak | 12 |"
    )
    assert meta["title"] == "Guide"


def test_broken_and_bombed_packages_are_unreadable_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.odt"
    broken.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(UnreadableFileError, match=r"broken\.odt"):
        MultiFormatConverter().run([broken])
    bomb = tmp_path / "bomb.ods"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("content.xml", b" " * (300 * 1024 * 1024))
    with pytest.raises(UnreadableFileError, match=r"bomb|unpack"):
        MultiFormatConverter().run([bomb])
    no_epub = tmp_path / "book.epub"
    with zipfile.ZipFile(no_epub, "w") as package:
        package.writestr("mimetype", "application/epub+zip")
    with pytest.raises(UnreadableFileError, match=r"container\.xml"):
        MultiFormatConverter().run([no_epub])
