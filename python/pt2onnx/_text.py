"""Messages shortened for one line: cut at a word boundary, with " ..." for what was left out, never in
the middle of a token (a number, a name, a path)."""


def shortened(text, width):
    """`text` when it fits in `width` characters, else its longest run of whole words that does, with
    " ..." (a text without spaces in the first `width` is cut at its last separator: , ; : / etc.)."""
    if len(text) <= width:
        return text
    room = max(width - 4, 1)
    cut = text.rfind(" ", 0, room + 1)
    if cut <= 0:  # one long token: at its last separator, else where it must
        cut = max(text.rfind(c, 0, room) for c in ",;:/=)]")
        cut = cut + 1 if cut > 0 else room
    return text[:cut].rstrip(" ,;:") + " ..."
