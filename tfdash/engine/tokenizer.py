"""Tokenizers: the checkpoint's tokenizer.json through `tokenizers`, or, for random weights, a
deterministic stand-in vocabulary of pronounceable pseudo-words, so the stream stays readable
(and is labelled as coming from random weights).

`StreamDecoder` turns ids into text pieces as they arrive, holding back incomplete UTF-8.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from tfdash.engine.checkpoint import regular_file
from tfdash.errors import CheckpointError
from tfdash.textsafe import visible

MAX_TOKENIZER_BYTES = 1 << 30  # the largest published tokenizer.json is tens of MB

_ONSETS = ["", "b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "ch", "dr", "gr", "kl", "pl", "sh", "st", "th", "tr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "n", "r", "s", "l", "m", "nd", "st", "th", "x"]
_PUNCT = [".", ",", ";", "!", "?", ":"]


class StandInTokenizer:
    """Token i <-> a fixed pseudo-word (a few are punctuation). Deterministic for a vocab size."""

    label = "stand-in vocabulary"

    def __init__(self, vocab_size: int):
        self.vocab_size = vocab_size
        self._words = [self._word(i) for i in range(min(vocab_size, 1 << 16))]
        self._index = {w.strip(): i for i, w in reversed(list(enumerate(self._words)))}

    @staticmethod
    def _word(i: int) -> str:
        if i % 29 == 7:
            return _PUNCT[(i // 29) % len(_PUNCT)]
        h = zlib.crc32(i.to_bytes(4, "little"))
        syllables = 1 + (h % 3)
        word = ""
        for s in range(syllables):
            h = zlib.crc32(h.to_bytes(4, "little"), s)
            word += _ONSETS[h % len(_ONSETS)] + _VOWELS[(h >> 8) % len(_VOWELS)]
        word += _CODAS[(h >> 16) % len(_CODAS)]
        return " " + word

    def encode(self, text: str) -> list[int]:
        ids = []
        for w in text.split():
            ids.append(self._index.get(w, zlib.crc32(w.encode()) % self.vocab_size))
        return ids or [0]

    def decode(self, ids) -> str:
        return "".join(self._words[i % len(self._words)] for i in ids)


class HFTokenizer:
    label = "tokenizer.json"

    def __init__(self, path: Path):
        from tokenizers import Tokenizer

        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as e:  # tokenizers raises a bare Exception on bad files
            raise CheckpointError(f"{path}: cannot load tokenizer ({visible(str(e).splitlines()[0])[:200]})") from None
        self.vocab_size = self._tok.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        try:
            return self._tok.encode(text, add_special_tokens=False).ids
        except Exception as e:  # e.g. a WordLevel model without an unknown token, on an unknown word
            raise CheckpointError(f"tokenizer.json cannot encode the prompt "
                                  f"({visible(str(e).splitlines()[0] if str(e) else type(e).__name__)[:200]})") from None

    def decode(self, ids) -> str:
        """The text of `ids`. An id the tokenizer has no token for (a checkpoint whose vocab_size is
        past its tokenizer's: the embedding's padding rows) is shown as `<id N>`: tokenizers drops it,
        and a generated token vanished from the text unsaid."""
        pieces, run = [], []
        for i in [*ids, None]:  # None: the end, where the last run is decoded
            if i is not None and self._tok.id_to_token(i) is not None:
                run.append(i)
                continue
            if run:
                pieces.append(self._tok.decode(run, skip_special_tokens=False))
                run = []
            if i is not None:
                pieces.append(f"<id {i}>")
        text = ""
        for p in pieces:  # a marker stands apart from the words beside it
            text += p if not text or text[-1].isspace() or p[:1].isspace() else " " + p
        return text


def load_tokenizer(ckpt_dir: str | Path) -> HFTokenizer:
    path = Path(ckpt_dir) / "tokenizer.json"
    if not path.exists() and not path.is_symlink():  # a dangling link: regular_file says so
        raise CheckpointError(f"{ckpt_dir} has no tokenizer.json")
    if regular_file(path) > MAX_TOKENIZER_BYTES:
        raise CheckpointError(f"{path}: larger than any tokenizer ({MAX_TOKENIZER_BYTES} bytes)")
    return HFTokenizer(path)


class StreamDecoder:
    """Incremental detokenisation (the prefix/read-offset scheme of text-generation-inference):
    decode a short window of recent ids and emit only the new, complete text."""

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self.ids: list[int] = []
        self.prefix = 0
        self.read = 0

    def push(self, token_id: int) -> str:
        self.ids.append(token_id)
        prefix_text = self.tok.decode(self.ids[self.prefix:self.read])
        new_text = self.tok.decode(self.ids[self.prefix:])
        if len(new_text) > len(prefix_text) and not new_text.endswith("\ufffd"):
            piece = new_text[len(prefix_text):]
            self.prefix, self.read = self.read, len(self.ids)
            return piece
        return ""
