from loom.llm.logprobs import normalise


def test_legacy_shape():
    data = {
        "tokens": [" a", " b"],
        "token_logprobs": [-0.1, -0.2],
        "top_logprobs": [{" a": -0.1, " c": -1.0}, None],
        "text_offset": [0, 2],
    }
    assert normalise(data) == [
        {
            "token": " a",
            "logprob": -0.1,
            "top_logprobs": [{"token": " a", "logprob": -0.1}, {"token": " c", "logprob": -1.0}],
        },
        {"token": " b", "logprob": -0.2},
    ]


def test_chat_shape():
    data = {
        "content": [
            {
                "token": "x",
                "logprob": -0.5,
                "bytes": [120],
                "top_logprobs": [{"token": "x", "logprob": -0.5, "bytes": [120]}],
            }
        ]
    }
    assert normalise(data) == [
        {"token": "x", "logprob": -0.5, "top_logprobs": [{"token": "x", "logprob": -0.5}]}
    ]


def test_nothing():
    assert normalise(None) == []
    assert normalise({}) == []
