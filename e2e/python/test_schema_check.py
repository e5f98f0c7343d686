"""The checker itself: it must reject what the SDK's TypedDicts do not allow."""

import pytest
from langgraph_sdk.schema import Assistant, Run, StreamPart, TaskResultPayload, ThreadState

from schema_check import check

ASSISTANT = {
    "assistant_id": "a", "graph_id": "g", "config": {}, "context": {}, "metadata": {},
    "created_at": "2025-01-01T00:00:00+00:00", "updated_at": "2025-01-01T00:00:00Z",
    "version": 1, "name": "n", "description": None,
}


def test_accepts_a_valid_assistant():
    check(ASSISTANT, Assistant)
    check(StreamPart("values", {"a": 1}, "1"), StreamPart)


@pytest.mark.parametrize(
    "value,tp",
    [
        ({**ASSISTANT, "version": "1"}, Assistant),
        ({k: v for k, v in ASSISTANT.items() if k != "name"}, Assistant),
        ({**ASSISTANT, "created_at": "yesterday"}, Assistant),
        ({**ASSISTANT, "config": []}, Assistant),
        ({"run_id": "r", "thread_id": "t", "assistant_id": "a", "created_at": "2025-01-01T00:00:00Z",
          "updated_at": "2025-01-01T00:00:00Z", "status": "done", "metadata": {}, "multitask_strategy": "enqueue"}, Run),
        ({"id": "t", "name": "n", "error": None, "interrupts": [], "result": [["a", 1]]}, TaskResultPayload),
        ({"values": {}, "next": [], "checkpoint": None, "metadata": {}, "created_at": None,
          "parent_checkpoint": None, "tasks": [{"id": "t"}], "interrupts": []}, ThreadState),
    ],
)
def test_rejects(value, tp):
    with pytest.raises(AssertionError):
        check(value, tp)
