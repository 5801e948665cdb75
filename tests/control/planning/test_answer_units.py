"""Answer units that carry the answer: items with their continuation, parameters with their default."""

from __future__ import annotations

from haygraph.control.planning.answer_units import MAX_UNIT_CHARS, answer_units, chunk_units, glue


class TestListItems:
    def test_item_keeps_its_next_line_with_the_value(self) -> None:
        text = "- Logs are kept on the server for a while.\n  Defaults to 90 days (about 3 months).\n- Other."
        assert answer_units(text)[0] == (
            "Logs are kept on the server for a while. Defaults to 90 days (about 3 months)."
        )

    def test_flag_with_default_line_after_a_blank_line_and_as_sub_item(self) -> None:
        text = (
            "## Options\n\n"
            "- `--timeout`: how long to wait for the server.\n\n"
            "  Default: `30` seconds.\n"
            "- `--retries`: attempts before giving up.\n"
            "  - Default: 3\n"
            "- `--verbose`: print more.\n"
        )
        assert answer_units(text) == [
            "`--timeout`: how long to wait for the server. Default: `30` seconds.",
            "`--retries`: attempts before giving up. Default: 3",
            "`--verbose`: print more.",
        ]

    def test_chinese_default_line_stays_with_its_parameter(self) -> None:
        text = "- `max_size`：单个附件的大小上限。\n默认值是 10MB。\n- `mode`：运行模式。"
        assert answer_units(text) == ["`max_size`：单个附件的大小上限。默认值是 10MB。", "`mode`：运行模式。"]

    def test_nested_items_are_quoted_with_their_lead_in(self) -> None:
        text = (
            "- 仓库收到退货后 **2 个工作日内** 完成质检。\n"
            "- 质检通过后，退款原路返回：\n"
            "  - 支付宝、微信支付：**1–3 个工作日** 到账；\n"
            "  - 银行卡：**3–7 个工作日** 到账；\n"
        )
        assert answer_units(text) == [
            "仓库收到退货后 2 个工作日内 完成质检。",
            "质检通过后，退款原路返回：支付宝、微信支付：1–3 个工作日 到账；",
            "质检通过后，退款原路返回：银行卡：3–7 个工作日 到账；",
        ]

    def test_a_list_after_a_paragraph_ending_in_a_colon_takes_it_as_lead_in(self) -> None:
        text = (
            "未显式处理的错误在开发和生产模式下有不同的行为：\n\n"
            "- 在开发模式下，错误会被抛出。\n\n"
            "- 在生产模式下，错误只会被记录到控制台。\n"
        )
        assert answer_units(text) == [
            "未显式处理的错误在开发和生产模式下有不同的行为：在开发模式下，错误会被抛出。",
            "未显式处理的错误在开发和生产模式下有不同的行为：在生产模式下，错误只会被记录到控制台。",
        ]
        # only the paragraph's last sentence leads the list; the ones before stand on their own
        assert answer_units(
            "Vue trims whitespace. The default strategy is:\n\n  1. Trim ends.\n  2. Drop lines."
        ) == [
            "Vue trims whitespace.",
            "The default strategy is: 1. Trim ends.",
            "The default strategy is: 2. Drop lines.",
        ]
        # an abbreviation inside the lead-in sentence does not cut it short
        assert answer_units(
            "Builds differ. Pick a build, e.g. one of these:\n\n- `vue.js`\n- `vue.cjs.js`"
        ) == [
            "Builds differ.",
            "Pick a build, e.g. one of these: `vue.js`",
            "Pick a build, e.g. one of these: `vue.cjs.js`",
        ]
        # a paragraph that does not end in a colon is no lead-in
        assert answer_units("Laptops are lent.\n\n- Monitors are lent too.") == [
            "Laptops are lent.",
            "Monitors are lent too.",
        ]

    def test_an_abbreviation_does_not_end_a_sentence(self) -> None:
        text = (
            "Flags apply to the esm-bundler build (i.e. `vue.esm-bundler.js`). Bring an id, e.g. a passport."
        )
        assert answer_units(text) == [
            "Flags apply to the esm-bundler build (i.e. `vue.esm-bundler.js`).",
            "Bring an id, e.g. a passport.",
        ]

    def test_units_know_the_heading_they_stand_under(self) -> None:
        units = chunk_units(
            "Intro text here.\n\n## `__VUE_OPTIONS_API__` {#VUE_OPTIONS_API}\n\nEnable / disable it."
        )
        assert [(u.heading, u.text) for u in units] == [
            ("", "Intro text here."),
            ("`__VUE_OPTIONS_API__`", "Enable / disable it."),
        ]

    def test_nested_items_without_a_lead_in_stay_apart(self) -> None:
        assert answer_units("- Laptops are lent.\n  - Monitors are lent too.") == [
            "Laptops are lent.",
            "Monitors are lent too.",
        ]

    def test_a_long_item_is_quoted_sentence_by_sentence(self) -> None:
        sentence = "Each office keeps a spare laptop for visitors and new staff members. "
        units = answer_units("- " + sentence * 6 + "(about 3 months)")
        assert len(units) == 6
        assert all(len(u) <= MAX_UNIT_CHARS for u in units)
        assert units[-1].endswith("members. (about 3 months)")  # the parenthesis stays on its sentence


class TestLabelsAndDefinitions:
    def test_bold_label_names_its_description(self) -> None:
        text = "**retention_days**\n\nHow long logs are kept. Default: 90.\n\nAnother paragraph here."
        assert answer_units(text) == [
            "retention_days: How long logs are kept. Default: 90.",
            "Another paragraph here.",
        ]

    def test_definition_list_term_and_definition(self) -> None:
        text = "Tenant\n: The organisation that owns a set of documents.\n"
        assert answer_units(text) == ["Tenant: The organisation that owns a set of documents."]


class TestReadableUnits:
    def test_no_html_include_fence_or_container_markup_in_units(self) -> None:
        text = (
            "<!--@include: ./parts/setup.md-->\n"
            "::: tip\n"
            'Index first with <a href="/cli#index">haygraph index</a>, see [the CLI](../cli.md).\n'
            ":::\n"
            "```bash\n"
            "haygraph index docs --store kb\n"
            "```\n"
            "{% include footer.md %}\n"
        )
        units = answer_units(text)
        assert units == [
            "Index first with haygraph index, see the CLI.",
            "haygraph index docs --store kb",
        ]
        for unit in units:
            for leak in ("<", "](", "@include", "{%", "```", ":::"):
                assert leak not in unit

    def test_units_know_their_block(self) -> None:
        units = chunk_units("First sentence here. Second one here.\n\nNext paragraph.")
        assert [(u.text, u.block) for u in units] == [
            ("First sentence here.", 0),
            ("Second one here.", 0),
            ("Next paragraph.", 1),
        ]

    def test_glue(self) -> None:
        assert glue("年假", "12 天") == "年假 12 天"
        assert glue("年假：", "十二天") == "年假：十二天"
        assert glue("Leave:", "12 days") == "Leave: 12 days"
        assert glue("", "x") == "x"


class TestNothingAttachesAcrossAHeading:
    def test_default_line_after_a_heading_or_a_label_starts_its_own_unit(self) -> None:
        text = (
            "- `--timeout`: wait time.\n\n## Retries\n\nDefault: 3 attempts.\n\n"
            "**backoff**\n\nDefaults to 2 s."
        )
        assert answer_units(text) == [
            "`--timeout`: wait time.",
            "Default: 3 attempts.",
            "backoff: Defaults to 2 s.",
        ]

    def test_definition_needs_its_term_in_the_same_section(self) -> None:
        assert answer_units("Tenant\n\n## Next\n\n: what it means here.") == [
            "Tenant",
            ": what it means here.",
        ]


class TestCodeComments:
    def test_a_comment_sentence_over_two_lines_is_one_unit(self) -> None:
        text = (
            "```js\n"
            "  errorComponent: ErrorComponent,\n"
            "  // The error component will be displayed if a timeout is\n"
            "  // provided and exceeded. Default: Infinity.\n"
            "  timeout: 3000\n"
            "```\n"
        )
        assert answer_units(text) == [
            "errorComponent: ErrorComponent,",
            "// The error component will be displayed if a timeout is provided and exceeded."
            " Default: Infinity.",
            "timeout: 3000",
        ]

    def test_comments_that_end_a_sentence_or_change_marker_stay_apart(self) -> None:
        text = "```sh\n# Install it.\n# Then run it\n// not the same marker\n#!/bin/sh\nx\n```\n"
        assert answer_units(text) == ["# Install it.", "# Then run it", "// not the same marker", "#!/bin/sh"]
