"""Tokenizers: the stand-in vocabulary of random weights is deterministic and readable; the
checkpoint's tokenizer.json loads; StreamDecoder never emits half a UTF-8 character."""

import os
import re
import subprocess
import sys

import pytest

from tfdash.engine.tokenizer import HFTokenizer, StandInTokenizer, StreamDecoder, load_tokenizer
from tfdash.errors import CheckpointError

PUNCT = set(".,;!?:")


# -- the stand-in vocabulary ----------------------------------------------------------------
def test_stand_in_is_deterministic_across_instances_and_processes():
    a, b = StandInTokenizer(8192), StandInTokenizer(8192)
    ids = list(range(0, 8192, 37))
    assert a.decode(ids) == b.decode(ids)
    sentence = "The GPU executes a matrix multiplication, tile by tile."
    assert a.encode(sentence) == b.encode(sentence)
    # Another interpreter with another hash seed: the same words and the same ids (the
    # vocabulary is built from crc32, never from Python's salted hash()).
    code = ("from tfdash.engine.tokenizer import StandInTokenizer as S; t = S(8192); "
            f"print(repr(t.decode({ids!r}))); print(t.encode({sentence!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout.splitlines()
    assert out[0] == repr(a.decode(ids))
    assert out[1] == str(a.encode(sentence))


def test_stand_in_is_readable():
    tok = StandInTokenizer(8192)
    words = [tok.decode([i]) for i in range(8192)]
    punct = [w for w in words if w in PUNCT]
    plain = [w for w in words if w not in PUNCT]
    # Pronounceable lower-case pseudo-words, each with its leading space, of a readable length.
    assert all(re.fullmatch(r" [a-z]{1,20}", w) for w in plain), [w for w in plain if not re.fullmatch(r" [a-z]{1,20}", w)][:5]
    assert all(re.search(r"[aeiou]", w) for w in plain)  # every word has a vowel
    assert 8192 / 29 - 2 < len(punct) < 8192 / 29 + 2  # about one token in 29 is punctuation
    assert len(set(plain)) > 0.6 * len(plain)  # mostly distinct: the stream does not look repetitive
    # Sizes the vocabulary does not fully spell out still decode (ids wrap onto the word list).
    big = StandInTokenizer(151936)
    assert big.decode([151935]) == big.decode([151935 % (1 << 16)])


def test_stand_in_encode():
    tok = StandInTokenizer(8192)
    # Text made of its own words encodes back to ids that spell the same text.
    ids = [i for i in range(1, 3000, 7) if tok.decode([i]) not in PUNCT]
    text = tok.decode(ids)
    assert tok.decode(tok.encode(text)) == text
    # Unknown words still get ids in range, the same every time.
    unknown = tok.encode("zzqx qwerty")
    assert len(unknown) == 2 and all(0 <= i < 8192 for i in unknown) and unknown == tok.encode("zzqx  qwerty")
    assert tok.encode("") == [0] and tok.encode("   ") == [0]  # never an empty prompt
    assert all(0 <= i < 300 for i in StandInTokenizer(300).encode("a b c d e f g"))


# -- tokenizer.json ---------------------------------------------------------------------------
def test_load_tokenizer_json(ckpt_factory, tmp_path):
    ckpt = ckpt_factory(tied=True)
    tok = load_tokenizer(ckpt.path)
    assert isinstance(tok, HFTokenizer) and tok.vocab_size == 300
    assert tok.encode("w3 w14 w299") == [3, 14, 299]
    assert tok.decode([3, 14, 299]) == "w3 w14 w299"
    with pytest.raises(CheckpointError, match="has no tokenizer.json"):
        load_tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{\"not\": \"a tokenizer\"}")
    with pytest.raises(CheckpointError, match="cannot load tokenizer") as e:
        load_tokenizer(tmp_path)
    assert "\n" not in str(e.value)


# -- streaming ----------------------------------------------------------------------------------
TEXT = "naïve café — 日本語 and 🎉🚀 done, ß∂ƒ©."


@pytest.fixture(scope="module")
def byte_tokenizer():
    """A byte-level BPE with no merges: every UTF-8 byte is its own token, so each multi-byte
    character is split across 2-4 tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({ch: i for i, ch in enumerate(alphabet)}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def stream(tokenizer, ids):
    dec = StreamDecoder(tokenizer)
    return [dec.push(i) for i in ids]


def test_stream_decoder_byte_level(byte_tokenizer, tmp_path):
    byte_tokenizer.save(str(tmp_path / "tokenizer.json"))
    tok = load_tokenizer(tmp_path)
    ids = tok.encode(TEXT)
    assert len(ids) == len(TEXT.encode("utf-8"))  # one token per byte
    pieces = stream(tok, ids)
    assert "".join(pieces) == TEXT
    assert not any("\ufffd" in p for p in pieces)
    # The 4-byte emoji arrives as three empty pieces and then the whole character.
    start = len(TEXT[:TEXT.index("🎉")].encode("utf-8"))
    assert pieces[start:start + 4] == ["", "", "", "🎉"]
    # A 3-byte character: two holds, then the character.
    start = len(TEXT[:TEXT.index("日")].encode("utf-8"))
    assert pieces[start:start + 3] == ["", "", "日"]


class BytesTokenizer:
    """A fake tokenizer: token i is byte i, decoded the way HF tokenizers do (lossy UTF-8)."""

    def decode(self, ids):
        return bytes(ids).decode("utf-8", errors="replace")


@pytest.mark.parametrize("text", [TEXT, "plain ascii", "ÿ" * 5, "🎉" * 3, "a\U0010ffffb"])
def test_stream_decoder_fake_tokenizer(text):
    pieces = stream(BytesTokenizer(), list(text.encode("utf-8")))
    assert "".join(pieces) == text
    assert not any("\ufffd" in p for p in pieces)
    # Every character comes out whole, in one piece, as soon as its last byte arrives.
    assert [p for p in pieces if p] == list(text)


def test_stream_decoder_words(ckpt_factory):
    tok = load_tokenizer(ckpt_factory(tied=True).path)
    ids = [5, 17, 250, 5, 0]
    pieces = stream(tok, ids)
    assert "".join(pieces) == tok.decode(ids) == "w5 w17 w250 w5 w0"
    assert all(pieces)  # one word per token, none held back
    # The stand-in: every token is its own piece too.
    st = StandInTokenizer(8192)
    assert stream(st, list(range(40))) == [st.decode([i]) for i in range(40)]


def test_an_id_past_the_tokenizer_is_shown(tmp_path):
    """A checkpoint whose vocab_size is past its tokenizer's (300 rows, 20 words): tokenizers drops an
    id it has no token for, so generated tokens vanished from the text unsaid. Each is `<id N>`."""
    from conftest import word_tokenizer

    word_tokenizer(20).save(str(tmp_path / "tokenizer.json"))
    tok = load_tokenizer(tmp_path)
    ids = [3, 257, 4, 299, 298]
    assert tok.decode(ids) == "w3 <id 257> w4 <id 299> <id 298>"
    assert "".join(stream(tok, ids)) == tok.decode(ids)
    assert tok.decode([3, 4]) == "w3 w4"  # ids it has: as tokenizers decodes them
