#!/usr/bin/env python3
"""Judge deepinfer-so-check's random outputs with an independent validator (Python `jsonschema`).

  build/recipe/deepinfer-so-check --json-whitespace 16 --sample 10 --sample-out drawn.jsonl < mb.jsonl > so.jsonl
  python3 bench/so_independent.py mb.jsonl drawn.jsonl

`deepinfer-so-check --sample` checks each output with our own validator, which shares the
compiler's reading of every keyword: a keyword both misread would pass unseen. This reads the
same outputs with `jsonschema` (the validator class the schema's `$schema` names, 2020-12 when
none, with its format checker) and lists every output it rejects, grouped by the keyword it names.
Known differences that are not ours to fix are counted apart:
- `pattern` and `patternProperties` run Python's `re` here, ECMA-262 in the compiler (`\\s` and
  `\\w`, `\\d` over Unicode differ; the compiler keeps to what both accept where it can);
- numbers of 16+ digits and exponents past a double's range are read as floats by Python's json.
Needs `python3-jsonschema` (Debian) or any jsonschema >= 4."""
import collections, json, re, sys

import jsonschema
from jsonschema import validators


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    schemas = {}
    with open(sys.argv[1]) as f:
        for line in f:
            d = json.loads(line)
            schemas[d.get("file", "")] = d["schema"]
    checkers = {}
    by_keyword = collections.Counter()
    examples = {}
    total = rejected = faults = skipped = 0
    long_number = re.compile(r"[0-9]{16}|[0-9][eE][+-]?[0-9]{3,}")
    with open(sys.argv[2]) as f:
        for line in f:
            d = json.loads(line)
            total += 1
            if d.get("fault"):
                faults += 1
                continue
            name, text = d["file"], d["text"]
            if long_number.search(text):
                skipped += 1
                continue
            if name not in checkers:
                schema = schemas[name]
                try:
                    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
                    checkers[name] = cls(schema, format_checker=getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker())
                except Exception as e:  # a schema the library cannot load (a remote $ref...)
                    checkers[name] = e
            v = checkers[name]
            if isinstance(v, Exception):
                skipped += 1
                continue
            try:
                value = json.loads(text)
                errors = list(v.iter_errors(value))
            except Exception as e:
                by_keyword["(" + type(e).__name__ + ")"] += 1
                examples.setdefault("(" + type(e).__name__ + ")", (name, text[:300], str(e)[:300]))
                rejected += 1
                continue
            if not errors:
                continue
            rejected += 1
            best = jsonschema.exceptions.best_match(errors)
            key = str(best.validator)
            by_keyword[key] += 1
            examples.setdefault(key + " " + name, (name, text[:300], best.message[:300]))
    print(f"outputs {total}, faults in the draw {faults}, not judged {skipped} (long numbers, schemas jsonschema cannot load), "
          f"rejected by jsonschema {rejected}")
    for k, n in by_keyword.most_common():
        print(f"  {n:6d}  {k}")
    for k, (name, text, msg) in sorted(examples.items()):
        print(f"\n{k}\n  {name}\n  output: {text}\n  jsonschema: {msg}")


if __name__ == "__main__":
    main()
