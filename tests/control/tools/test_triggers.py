"""`OfflineTrigger` declarations: cues, the entity argument, and their validation on the contract."""

from __future__ import annotations

import pytest

from haygraph.control.errors import ToolContractError
from haygraph.control.texts import Bilingual
from haygraph.control.tools import Cues, EntityArgument, OfflineTrigger, ToolContract
from tests.control.tool_helpers import ROOM, RoomArgs, RoomResult

ASK = Bilingual(en="Which one?", zh="哪一个？")


def contract(trigger: OfflineTrigger) -> ToolContract:
    return ToolContract(
        name="room_status",
        purpose="p",
        when_to_use="w",
        when_not_to_use="n",
        on_failure="f",
        args_model=RoomArgs,
        result_model=RoomResult,
        func=lambda args: RoomResult(room=args.room, free=True),
        intents=("*", "rooms"),
        offline_trigger=trigger,
    )


class TestCues:
    def test_english_whole_words_case_insensitive_and_chinese_substrings(self) -> None:
        cues = Cues(en=("rooms?", r"meet(?:ing)?"), zh=("会议室",))
        assert (
            cues.found_in("Is the ROOM free") and cues.found_in("a meeting") and cues.found_in("三楼会议室")
        )
        assert not cues.found_in("bedroom mushrooms") and not cues.found_in("meetup")
        assert not Cues().found_in("anything")

    def test_bad_regex_names_the_cue(self) -> None:
        with pytest.raises(ToolContractError, match="an English cue is not a valid regular expression"):
            Cues(en=("(unclosed",))


class TestEntityArgument:
    def test_find_blank_and_malformed(self) -> None:
        assert ROOM.find_all("B204 or C101, not b204") == ["B204", "C101"]
        assert ROOM.without_values("B204?").strip() == "?"
        assert ROOM.find_malformed("room B20") == "B20" and ROOM.find_malformed("room B204") is None

    def test_clarification_in_the_question_language_naming_the_wrong_value(self) -> None:
        assert ROOM.clarification("is it free?") == "Which room (e.g. B204)?"
        assert ROOM.clarification("空吗", "B2") == "“B2”不是会议室编号。请问是哪个会议室（例如 B204）？"
        bare = EntityArgument(argument="room", kind="rooms", pattern="x", ask=ASK)
        assert bare.clarification("free?", "B2") == "Which one?"  # no `invalid` text declared

    def test_bad_pattern_is_a_contract_error(self) -> None:
        with pytest.raises(ToolContractError, match="entity 'rooms' pattern is not a valid"):
            EntityArgument(argument="room", kind="rooms", pattern="[", ask=ASK)


class TestTriggerOnContract:
    def test_trigger_intent_is_the_first_explicit_intent(self) -> None:
        assert contract(OfflineTrigger(keywords=Cues(en=("room",)), entity=ROOM)).trigger_intent == "rooms"

    def test_arguments_must_be_fields_of_the_args_model(self) -> None:
        with pytest.raises(
            ToolContractError, match=r"names arguments \['floor'\] that are not fields of RoomArgs"
        ):
            contract(OfflineTrigger(keywords=Cues(en=("room",)), args={"floor": 3}))
        wrong = EntityArgument(argument="number", kind="rooms", pattern="x", ask=ASK)
        with pytest.raises(ToolContractError, match=r"\['number'\]"):
            contract(OfflineTrigger(keywords=Cues(en=("room",)), entity=wrong))

    def test_entity_argument_cannot_also_be_fixed(self) -> None:
        with pytest.raises(ToolContractError, match="'room' is filled by the entity"):
            OfflineTrigger(keywords=Cues(en=("room",)), entity=ROOM, args={"room": "A000"})

    def test_contract_with_a_trigger_stays_hashable(self) -> None:
        first = contract(OfflineTrigger(keywords=Cues(en=("room",)), entity=ROOM, args={"floor_plan": True}))
        assert hash(first) == hash(first) and first.model_schema() == first.model_schema()

    def test_not_a_trigger_is_refused(self) -> None:
        with pytest.raises(ToolContractError, match="offline_trigger must be an OfflineTrigger"):
            contract({"keywords": ["room"]})  # type: ignore[arg-type]


class TestEntityNormalisation:
    """Entity values are found in NFKC-normalised text with ASCII-only patterns."""

    def test_full_width_digits_match_and_other_scripts_do_not(self) -> None:
        entity = EntityArgument(
            argument="order_id",
            kind="order_ids",
            pattern=r"(?<![0-9])[0-9]{12}(?![0-9])",
            malformed=r"(?<![0-9])[0-9]{5,}(?![0-9])",
            ask=Bilingual(en="number?", zh="号码？"),
        )
        assert entity.find_all("订单２０２４０５１２０００１") == ["202405120001"]
        assert entity.find_malformed("order １２３４５") == "12345"
        assert entity.find_all("order ٢٠٢٤٠٥١٢٠٠٠١ and २०२४०५१२०००१") == []
        assert entity.find_malformed("order ٢٠٢٤٠٥١٢٠٠٠١") is None
