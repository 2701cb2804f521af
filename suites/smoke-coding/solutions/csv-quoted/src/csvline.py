"""Parsing one line of the price list export (a CSV dialect)."""


def parse_line(line: str) -> list[str]:
    """Split one CSV line into its fields.

    - Fields are separated by commas. Spaces around an unquoted field are dropped.
    - A field may be quoted with double quotes: the quotes are removed, commas inside are part of the
      field, spaces inside are kept, and two double quotes ("") stand for one. Spaces between the closing
      quote and the next comma are dropped.
    - An empty line has no fields; a line of one comma has two empty fields.
    - A quote that is never closed raises ValueError.

    >>> parse_line('a, "b, c" ,"say ""hi"" now"')
    ['a', 'b, c', 'say "hi" now']
    """
    if not line:
        return []
    fields: list[str] = []
    index = 0
    while True:
        while index < len(line) and line[index] == " ":
            index += 1
        if index < len(line) and line[index] == '"':
            index += 1
            value = []
            while True:
                close = line.find('"', index)
                if close < 0:
                    raise ValueError(f"unclosed quote in {line!r}")
                value.append(line[index:close])
                if line.startswith('""', close):
                    value.append('"')
                    index = close + 2
                else:
                    index = close + 1
                    break
            comma = line.find(",", index)
            end = len(line) if comma < 0 else comma
            fields.append("".join(value))
        else:
            comma = line.find(",", index)
            end = len(line) if comma < 0 else comma
            fields.append(line[index:end].strip())
        if end == len(line):
            return fields
        index = end + 1


def parse_prices(text: str) -> dict[str, int]:
    """``name,price_cents`` lines (the first line is a header) as a mapping."""
    rows = [parse_line(line) for line in text.splitlines()[1:] if line.strip()]
    return {name: int(price) for name, price in rows}
